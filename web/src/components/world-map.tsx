import { useEffect, useState } from "preact/hooks";

interface MapData {
  viewBox: string;
  locations: { id: string; name: string; path: string }[];
}

let mapData: Promise<MapData> | undefined;
/** The outlines (@svg-maps/world, CC BY 4.0) are large, so they load only when a map is shown. */
export function loadMap(): Promise<MapData> {
  mapData ??= import("@svg-maps/world").then((m) => m.default as MapData);
  return mapData;
}

/** Country names by ISO 3166-1 alpha-2 code, from the map's data. */
export function useCountryNames(): Map<string, string> {
  const [names, setNames] = useState(new Map<string, string>());
  useEffect(() => {
    loadMap().then((m) => setNames(new Map(m.locations.map((l) => [l.id.toUpperCase(), l.name]))));
  }, []);
  return names;
}

/** A world map with each country shaded by its value (square-root scale, so small ones still show). */
export function WorldMap({ values, format }: { values: Map<string, number>; format: (n: number) => string }) {
  const [map, setMap] = useState<MapData>();
  useEffect(() => {
    loadMap().then(setMap);
  }, []);
  if (!map) return <div class="map loading">Loading map…</div>;
  const max = Math.max(...values.values(), 0) || 1;
  return (
    <svg class="map" viewBox={map.viewBox} role="img" aria-label="World map shaded by country">
      {map.locations.map((l) => {
        const code = l.id.toUpperCase();
        const value = values.get(code) ?? 0;
        const shade = value > 0 ? 0.15 + 0.85 * Math.sqrt(value / max) : 0;
        return (
          <path
            d={l.path}
            data-country={code}
            data-value={value}
            class={value > 0 ? "country shaded" : "country"}
            style={value > 0 ? { fill: `rgba(37, 99, 235, ${shade.toFixed(3)})` } : undefined}
          >
            <title>{`${l.name}: ${format(value)}`}</title>
          </path>
        );
      })}
    </svg>
  );
}
