// Memory per parked worker in bare xstate 5 (bench/run.sh, `parked_memory`): a parent that
// spawns N worker actors, each waiting in its state for an event that never comes, as jr2c's
// BM_ParkedWorkerMemory parks N workers at their Gates. The figure is the growth of the V8 heap
// (after a full GC before and after) per worker: what the actors hold, as mallinfo2's bytes are
// for jr2c. Also the growth of the process's resident set over the same span, per worker
// (`parked_rss`, beside jr2c's /proc/self/statm delta): pages V8 touched, so coarse at small N.
// Run with `node --expose-gc`.
//
//   node --expose-gc xstate_parked.mjs --workers 10000
//
// Prints one JSON line: {"bytesPerWorker", "rssBytesPerWorker", "workers", "xstate"}.
import { createActor, createMachine, enqueueActions, setup } from "xstate";
import { createRequire } from "node:module";

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};
const N = Number(arg("workers", "10000"));
if (typeof global.gc !== "function") throw new Error("run with node --expose-gc");

const worker = createMachine({
  context: ({ input }) => ({ item: input.item }),
  initial: "working",
  states: { working: { on: { finish: "done" } }, done: { type: "final" } },
});
// The parent spawns them itself (`spawnChild`, as xstate_pool.mjs does), so each is one of its
// children in its snapshot, with its item as input.
const parent = setup({ actors: { worker } }).createMachine({
  initial: "running",
  entry: enqueueActions(({ enqueue }) => {
    for (let i = 0; i < N; i++)
      enqueue.spawnChild("worker", { id: "i" + i, input: { item: { id: "i" + i, mode: "wait" } } });
  }),
  states: { running: { on: { stop: "over" } }, over: { type: "final" } },
});

global.gc();
const heap0 = process.memoryUsage().heapUsed;
const rss0 = process.memoryUsage().rss;
const actor = createActor(parent);
actor.start();
const children = Object.values(actor.getSnapshot().children);
global.gc();
const heap1 = process.memoryUsage().heapUsed;
const rss1 = process.memoryUsage().rss;
if (children.filter((c) => c.getSnapshot().value === "working").length !== N) throw new Error("not all parked");
if (heap1 <= heap0 || rss1 <= rss0) throw new Error(`no growth: heap ${heap0} -> ${heap1}, rss ${rss0} -> ${rss1}`);
const version = createRequire(import.meta.url)("xstate/package.json").version;
process.stdout.write(
  JSON.stringify({
    bytesPerWorker: Math.round((heap1 - heap0) / N),
    rssBytesPerWorker: Math.round((rss1 - rss0) / N),
    workers: N,
    xstate: version,
  }) + "\n",
);
