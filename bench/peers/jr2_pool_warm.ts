// jr2 0.1.4's real pool(), warmed like the other arms (#33: "the jr2 0.1.4 arm warmed like the
// others"): the harness's throughput scenario (scenarios/throughput.ts: an in-memory queue whose
// next() claims in a microtask, workers that complete after one setImmediate hop), run once as a
// discarded warm-up and then measured, in one process. Prints one JSON line:
// {"itemsPerSec", "wallMs", "items", "cap", "itemsInOutput"}.
//   ./node_modules/.bin/tsx jr2_pool_warm.ts --items 10000 --cap 8   (in bench/out/peers)
import { createActor, fromPromise } from "xstate";
import { pool, source } from "./jr2src/pool.ts";
import { hopWorker } from "./lib/workers.ts";

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : def;
};
const N = Number(arg("items", "10000"));
const cap = Number(arg("cap", "8"));

async function once(): Promise<{ ms: number; got: number }> {
  const items = Array.from({ length: N }, (_, i) => ({ id: `I-${String(i + 1).padStart(6, "0")}` }));
  let cursor = 0;
  const next = fromPromise<{ id: string } | null, { active: string[] }>(async () => {
    if (cursor >= N) return null;
    return items[cursor++]!;
  });
  const machine = pool(hopWorker, {
    id: "throughput",
    source: source({ next }),
    itemId: (i: { id: string }) => i.id,
    cap,
  });
  const t0 = performance.now();
  const actor = createActor(machine);
  const done = new Promise<void>((resolve, reject) =>
    actor.subscribe({ complete: () => resolve(), error: (e) => reject(e) }),
  );
  actor.start();
  await done;
  const ms = performance.now() - t0;
  const out = (actor.getSnapshot() as any).output as { items: Record<string, unknown> };
  return { ms, got: Object.keys(out.items).length };
}

await once(); // warm-up, discarded
const { ms, got } = await once();
process.stdout.write(
  JSON.stringify({ itemsPerSec: Math.round((got / ms) * 1000), wallMs: Math.round(ms), items: N, cap, itemsInOutput: got }) + "\n",
);
