// DBOS Transact (@dbos-inc/dbos-sdk, pinned in package.json), the peer of bench/compare.py's
// pg_items (docs/performance.md): N items, one workflow per item, one durable step each (the step
// computes a value from its item and returns it; DBOS checkpoints its output in the system
// database before the workflow goes on), at concurrency C, through DBOS's own API. Warmed as the
// other arms: one round of N items is run and discarded, then a second round is measured, in one
// process. Prints one JSON line: {"workflowsPerSec", "stepsPerSec", "wallMs", "items", "cap",
// "mode", "done"}.
//
//   node dbos_items.mjs --pg "host=/sock port=N user=postgres dbname=postgres" --db NAME
//                       [--items 1000] [--cap 8] [--mode queue|direct] [--poll-ms 10]
//
// --mode queue (the default): DBOS's documented way to bound concurrency, a WorkflowQueue with
// workerConcurrency C; every item is enqueued with DBOS.startWorkflow(wf, {queueName}) and the
// queue's dispatcher starts at most C at once. The dispatcher polls the queue every
// minPollingIntervalMs (DBOS's default 1000 ms would cap this at ~C workflows a second): --poll-ms
// sets it (10 by default, the fastest that did not cost more than it gave here). The round ends
// when the system database has every workflow SUCCESS (its status row, written after the
// workflow's function returns), read by one count query once the process has seen N returns.
// --mode direct: C starters in this process, each calling the workflow function and awaiting it
// (a workflow called directly runs at once and resolves after its status is recorded).
//
// The system database is --db on the server (bench/compare.py makes it fresh for each process);
// DBOS runs its own migrations into it at launch, outside the measured round.
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import { arg, connection } from "./pgconn.mjs";

const N = Number(arg("items", "1000"));
const cap = Number(arg("cap", "8"));
const mode = arg("mode", "queue");
const pollMs = Number(arg("poll-ms", "10"));
const { pg: pgOpts, url } = connection(arg("pg", process.env.JR2_BENCH_PG ?? ""), arg("db", "bench_dbos"));

let returned = 0;
const compute = DBOS.registerStep(async (i) => i * 2 + 1, { name: "compute" });
const item = DBOS.registerWorkflow(
  async (i) => {
    const v = await compute(i);
    returned++;
    return v;
  },
  { name: "item" },
);

DBOS.setConfig({ name: "jr2bench", systemDatabaseUrl: url, logLevel: "warn", runAdminServer: false });
await DBOS.launch();
const queue = mode === "queue"
  ? await DBOS.registerQueue("items", { workerConcurrency: cap, minPollingIntervalMs: pollMs })
  : null;
const check = new pg.Pool({ ...pgOpts, max: 1 });

async function round(tag) {
  returned = 0;
  const t0 = performance.now();
  if (mode === "queue") {
    for (let i = 0; i < N; i++) {
      await DBOS.startWorkflow(item, { queueName: queue.name, workflowID: `${tag}-${i}` })(i);
    }
    // The process has run every workflow's function; the round ends when the system database
    // says every one is SUCCESS (its status is written after the function returns).
    while (returned < N) await new Promise((r) => setTimeout(r, 1));
    for (;;) {
      const { rows } = await check.query(
        "SELECT count(*)::int AS n FROM dbos.workflow_status WHERE workflow_uuid LIKE $1 AND status = 'SUCCESS'",
        [`${tag}-%`],
      );
      if (rows[0].n >= N) break;
      await new Promise((r) => setTimeout(r, 1));
    }
  } else {
    let next = 0;
    const starter = async () => {
      while (next < N) {
        const i = next++;
        await DBOS.withNextWorkflowID(`${tag}-${i}`, () => item(i));
      }
    };
    await Promise.all(Array.from({ length: cap }, starter));
  }
  return { ms: performance.now() - t0, done: returned };
}

await round("warm"); // warm-up, discarded
const { ms, done } = await round("measured");
await check.end();
await DBOS.shutdown();
process.stdout.write(
  JSON.stringify({
    workflowsPerSec: Math.round((done / ms) * 1000),
    stepsPerSec: Math.round((done / ms) * 1000), // one step a workflow
    wallMs: Math.round(ms),
    items: N,
    cap,
    mode,
    done,
  }) + "\n",
);
process.exit(done === N ? 0 : 1);
