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
  // Traces come from a few application servers each sending many: a small cache of recent
  // addresses saves a tree walk per trace. Oldest out first, so a scan cannot grow it.
  const recent = new Map<string, string>();
  return (address) => {
    if (!address) return "";
    let country = recent.get(address);
    if (country !== undefined) return country;
    try {
      country = reader.get(address.startsWith("::ffff:") ? address.slice(7) : address)?.country_code ?? "";
    } catch {
      country = ""; // not an IP address
    }
    if (recent.size >= recentAddresses) recent.delete(recent.keys().next().value!);
    recent.set(address, country);
    return country;
  };
}

/** Addresses whose country is remembered. */
const recentAddresses = 4096;
