/** Distinct colours for series (models, groups). */
const colours = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

/**
 * A series' colour, from its name alone (FNV-1a into the palette): a model keeps its colour in
 * every range, filter and chart, whatever its rank there.
 */
export function colourOf(name: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193);
  return colours[(hash >>> 0) % colours.length]!;
}
