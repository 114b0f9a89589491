// Graphile Worker (graphile-worker, pinned in package.json), the second peer of bench/compare.py's
// pg_items (docs/performance.md): N jobs added in one batch (WorkerUtils.addJobs, its fast
// documented path), a task that does the same trivial work as the other arms' step (computes a
// value from its payload), run at concurrency C until every job is done (a finished job's row is
// deleted). Warmed as the other arms: one round of N jobs is run and discarded, then a second is
// measured, in one process; a round's time runs from the batch add to the last job's row gone.
// Prints one JSON line: {"jobsPerSec", "wallMs", "items", "cap", "done"}.
//
//   node graphile_items.mjs --pg "host=/sock port=N user=postgres dbname=postgres" --db NAME
//                           [--items 1000] [--cap 8]
//
// Options as the performance page of Graphile Worker's documentation sets them for throughput:
// concurrentJobs C, maxPoolSize C + 1, a local queue (the pool locks and fetches a batch of jobs,
// served to its workers without a round trip each; size 500 as there), and completions batched
// (completeJobBatchDelay 0: the completions of one tick go in one statement). The schema is made
// by its migrations at the first run, outside the measured round.
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import { arg, connection } from "./pgconn.mjs";

const N = Number(arg("items", "1000"));
const cap = Number(arg("cap", "8"));
const { url } = connection(arg("pg", process.env.JR2_BENCH_PG ?? ""), arg("db", "bench_graphile"));

// Errors and warnings only: the default logger writes a line per job to stdout, which costs more
// than the job here (and the other arms print no line per item).
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") process.stderr.write(`${level}: ${message}\n`);
});
let done = 0;
let values = 0;
const taskList = {
  item: async (payload) => {
    values += payload.i * 2 + 1;
    done++;
  },
};

const utils = await makeWorkerUtils({ connectionString: url, logger });
await utils.migrate();
const runner = await run({
  connectionString: url,
  concurrency: cap,
  maxPoolSize: cap + 1,
  noHandleSignals: true,
  pollInterval: 2000,
  preset: {
    worker: {
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  },
  logger,
  taskList,
});

async function round() {
  done = 0;
  const t0 = performance.now();
  await utils.addJobs(Array.from({ length: N }, (_, i) => ({ identifier: "item", payload: { i } })));
  while (done < N) await new Promise((r) => setTimeout(r, 1));
  // Every task has returned; the round ends when their completions are committed (the rows gone).
  await utils.withPgClient(async (client) => {
    for (;;) {
      const { rows } = await client.query("SELECT count(*)::int AS n FROM graphile_worker.jobs");
      if (rows[0].n === 0) break;
      await new Promise((r) => setTimeout(r, 1));
    }
  });
  return performance.now() - t0;
}

await round(); // warm-up, discarded
const ms = await round();
await runner.stop();
await utils.release();
process.stdout.write(
  JSON.stringify({ jobsPerSec: Math.round((done / ms) * 1000), wallMs: Math.round(ms), items: N, cap, done }) + "\n",
);
process.exit(done === N ? 0 : 1);
