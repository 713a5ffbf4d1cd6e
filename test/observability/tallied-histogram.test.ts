import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { talliedHistogram } from "../../src/observability/metrics.js";

const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const config = { name: "calltrace_request_duration_seconds", help: "Time from arrival to end, by protocol" };

describe("talliedHistogram", () => {
  it("exposes exactly what a prom-client Histogram fed the same observations exposes", async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const histogram = new Histogram({ ...config, labelNames: ["protocol"], buckets, registers: [theirs] });
    const observe = talliedHistogram({ ...config, labelName: "protocol", buckets, registers: [ours] });
    expect(await ours.metrics()).toBe(await theirs.metrics());

    // On the bounds, between them, past the last one, and labels first seen in between.
    const observations: [string, number][] = [
      ["rest", 0.0004],
      ["rest", 0.001],
      ["grpc", 0.0031],
      ["rest", 0.0049],
      ["connect", 0.25],
      ["rest", 12.5],
      ["grpc", 10],
      ["http", 0],
      ["rest", 0.07],
    ];
    for (let i = 0; i < 200; i++) observations.push([i % 3 === 0 ? "grpc" : "rest", (i * 0.0137) % 3]);
    for (const [protocol, seconds] of observations) {
      histogram.observe({ protocol }, seconds);
      observe(protocol, seconds);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toMatch(/^calltrace_request_duration_seconds_bucket\{le="\+Inf",protocol="rest"\} \d+$/m);
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  });
});
