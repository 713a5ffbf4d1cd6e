import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Reader, type Response } from "maxmind";

/** Maps a client address to its ISO 3166-1 alpha-2 country, or "" when unknown (D16). */
export type CountryLookup = (address: string | undefined) => string;

/**
 * Reads the CC0 geo-whois-asn-country database that @ip-location-db ships in npm (public-domain
 * data from the regional internet registries' whois and ASN records), loaded once into memory.
 */
export function openCountryLookup(): CountryLookup {
  const require = createRequire(import.meta.url);
  const file = require.resolve("@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb");
  const reader = new Reader<Response & { country_code?: string }>(readFileSync(file));
  return (address) => {
    if (!address) return "";
    try {
      return reader.get(address.startsWith("::ffff:") ? address.slice(7) : address)?.country_code ?? "";
    } catch {
      return ""; // not an IP address
    }
  };
}
