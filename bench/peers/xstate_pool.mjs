// The bare xstate 5 peer of jr2c's Pool (bench/run.sh): a parent machine that keeps up to `cap`
// worker actors live, each spawned for one item, and spawns the next when one is done. No Source
// protocol, no Gates, no registration table: the least an xstate program does to run N items
// under a cap, so the ratio against it is the engine's, not jr2's features'.
//
//   node xstate_pool.mjs --items 10000 --cap 8 [--worker immediate|wait]
//
// `immediate`: a worker is final on start (jr2c's BM_PoolItems, mode 0). `wait`: a worker waits
// for an event and the parent answers each worker when `cap` of them are live, so `cap` workers
// stay live at once (the "workers that stay live" row). Prints one JSON line:
// {"itemsPerSec", "wallMs", "items", "cap", "xstate"}. A warm-up run of the same size is run first
// and discarded.
import { assign, createActor, createMachine, enqueueActions, setup } from "xstate";
import { createRequire } from "node:module";

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};
const N = Number(arg("items", "10000"));
const cap = Number(arg("cap", "8"));
const kind = arg("worker", "immediate");

const worker =
  kind === "wait"
    ? createMachine({ initial: "work", states: { work: { on: { go: "done" } }, done: { type: "final" } } })
    : createMachine({ initial: "work", states: { work: { always: "done" }, done: { type: "final" } } });

function makePool() {
  const fill = enqueueActions(({ context, enqueue, self }) => {
    let { next, live } = context;
    while (live < cap && next < N) {
      enqueue.spawnChild("worker", { id: "w" + next });
      next++;
      live++;
    }
    enqueue.assign({ next, live });
    // `wait` workers: answer every live one once the cap is full (or the items are out).
    if (kind === "wait" && (live === cap || next === N)) {
      enqueue(({ self: parent }) => {
        for (const child of Object.values(parent.getSnapshot().children)) child.send({ type: "go" });
      });
    }
  });
  return setup({ actors: { worker } }).createMachine({
    context: { next: 0, live: 0, done: 0 },
    initial: "running",
    entry: fill,
    states: {
      running: {
        always: { guard: ({ context }) => context.done === N, target: "finished" },
        on: {
          "xstate.done.actor.*": {
            actions: [
              // A child that is done is stopped and dropped from the parent's children.
              enqueueActions(({ enqueue, event }) => enqueue.stopChild(event.actorId)),
              assign(({ context }) => ({ live: context.live - 1, done: context.done + 1 })),
              fill,
            ],
          },
        },
      },
      finished: { type: "final" },
    },
    output: ({ context }) => context.done,
  });
}

async function once() {
  const t0 = performance.now();
  const actor = createActor(makePool());
  const done = new Promise((resolve, reject) =>
    actor.subscribe({ complete: () => resolve(actor.getSnapshot().output), error: reject }),
  );
  actor.start();
  const got = await done;
  const ms = performance.now() - t0;
  if (got !== N) throw new Error(`only ${got} of ${N} items finished`);
  return ms;
}

await once(); // warm-up, discarded
const ms = await once();
const version = createRequire(import.meta.url)("xstate/package.json").version;
process.stdout.write(
  JSON.stringify({ itemsPerSec: Math.round((N / ms) * 1000), wallMs: Math.round(ms), items: N, cap, worker: kind, xstate: version }) + "\n",
);
