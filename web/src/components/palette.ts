/** Distinct colours for series (models, groups): Tableau 20, so a view of many models rarely shares one. */
const colours = [
  "#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d", "#59a14f", "#8cd17d", "#b6992d", "#f1ce63", "#499894", "#86bcb6",
  "#e15759", "#ff9d9a", "#79706e", "#bab0ac", "#d37295", "#fabfd2", "#b07aa1", "#d4a6c8", "#9d7660", "#d7b5a6",
];

/** A name's own place in the palette (FNV-1a): the same in every range, filter and chart. */
function slotOf(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % colours.length;
}

/**
 * The colours of a view's series, from their names, not their rank: each takes its own slot, and
 * when two names of the view share one, the later name (in name order) takes the next free slot,
 * so a view never draws two series alike while it has fewer than 20 of them.
 */
export function coloursOf(names: string[]): Map<string, string> {
  const taken = new Set<number>();
  const assigned = new Map<string, string>();
  for (const name of [...new Set(names)].sort()) {
    let slot = slotOf(name);
    for (let probe = 0; probe < colours.length && taken.has(slot); probe++) slot = (slot + 1) % colours.length;
    taken.add(slot);
    assigned.set(name, colours[slot]!);
  }
  return assigned;
}
