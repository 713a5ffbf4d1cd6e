/** Distinct colours for series (models); the same model keeps its colour across charts. */
const colours = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

export function colourOf(index: number): string {
  return colours[index % colours.length]!;
}
