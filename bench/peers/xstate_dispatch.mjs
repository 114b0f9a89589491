// ns per event in xstate 5 (bench/run.sh, `dispatch`): the dispatch benchmark's machine
// (bench/dispatch/machine20.jr2, 20 states in 3 levels) written in xstate: four top states, each
// a compound state of two leaves and one more leaf; `step` walks every leaf in turn and counts
// the steps in the context; `reset` goes back to the start.
//
//   node xstate_dispatch.mjs [--events 1000000]
//
// Sends `step` to one started actor, a warm-up of the same count first (discarded). Prints one
// JSON line: {"nsPerEvent", "events", "xstate"}.
import { assign, createActor, createMachine } from "xstate";
import { createRequire } from "node:module";

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};
const EVENTS = Number(arg("events", "1000000"));
const count = assign({ count: ({ context }) => context.count + 1 });

const states = {};
for (let i = 0; i < 4; i++) {
  const next = `#ring.t${(i + 1) % 4}`;
  states[`t${i}`] = {
    initial: `m${i}`,
    states: {
      [`m${i}`]: {
        initial: `a${i}`,
        states: {
          [`a${i}`]: { on: { step: { target: `b${i}`, actions: count } } },
          [`b${i}`]: { on: { step: { target: `#ring.t${i}.k${i}`, actions: count } } },
        },
      },
      [`k${i}`]: {
        on: { step: { guard: ({ context }) => context.count >= 0, target: next, actions: count } },
      },
    },
    on: { reset: { target: "#ring.t0", actions: assign({ count: 0 }) } },
  };
}
const ring = createMachine({ id: "ring", context: { count: 0 }, initial: "t0", states });

function run() {
  const actor = createActor(ring);
  actor.start();
  const step = { type: "step" };
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < EVENTS; i++) actor.send(step);
  const ns = Number(process.hrtime.bigint() - t0);
  if (actor.getSnapshot().context.count !== EVENTS) throw new Error("a step was not taken");
  return ns / EVENTS;
}

run(); // warm-up, discarded
const ns = run();
const version = createRequire(import.meta.url)("xstate/package.json").version;
process.stdout.write(JSON.stringify({ nsPerEvent: ns, events: EVENTS, xstate: version }) + "\n");
