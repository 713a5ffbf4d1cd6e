import { describe, expect, it } from "vitest";
import { internalUrlReason, isInternalAddress } from "../../src/alerts/internal-address.js";
import { DashboardClient } from "../dashboard/dashboard-client.js";
import { startTestService } from "../support/test-service.js";
import { startWebhookReceiver } from "../support/webhook-receiver.js";

// D62: without ALERT_PRIVATE_URLS, a destination may not point into the service's own network.
describe("internal addresses", () => {
  it.each([
    ["127.0.0.1", true],
    ["10.1.2.3", true],
    ["172.16.0.1", true],
    ["172.31.255.255", true],
    ["192.168.1.1", true],
    ["169.254.169.254", true],
    ["100.64.0.1", true],
    ["0.0.0.0", true],
    ["224.0.0.1", true],
    ["::1", true],
    ["::", true],
    ["fe80::1", true],
    ["fd12:3456::1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:10.0.0.1", true],
    ["8.8.8.8", false],
    ["172.32.0.1", false],
    ["1.1.1.1", false],
    ["2606:4700:4700::1111", false],
    ["::ffff:8.8.8.8", false],
  ])("%s is internal: %s", (address, internal) => {
    expect(isInternalAddress(address)).toBe(internal);
  });

  it("a URL whose host is or resolves to one says which; a public or unresolvable host passes", async () => {
    expect(await internalUrlReason("http://127.0.0.1:8080/hook")).toBe(
      "127.0.0.1 is an internal address; ALERT_PRIVATE_URLS=true allows it",
    );
    expect(await internalUrlReason("http://[::1]/hook")).toContain("::1 is an internal address");
    expect(await internalUrlReason("http://localhost:9/hook")).toMatch(/^localhost \((127\.0\.0\.1|::1)\) is an internal address/);
    expect(await internalUrlReason("https://8.8.8.8/hook")).toBeUndefined();
    expect(await internalUrlReason("https://no-such-host.invalid/hook")).toBeUndefined();
  });

  it("AlertService refuses a webhook or Slack URL on loopback naming the field, and nothing reaches the receiver", async () => {
    const service = await startTestService({ alertPrivateUrls: false });
    const receiver = await startWebhookReceiver();
    try {
      const owner = new DashboardClient(service.url);
      await owner.signUp("owner@example.com");
      for (const kind of ["ALERT_DESTINATION_KIND_WEBHOOK", "ALERT_DESTINATION_KIND_SLACK"]) {
        const refused = await owner.call("AlertService/CreateDestination", { kind, name: "inward", url: receiver.url });
        expect(refused.status).toBe(400);
        expect(refused.body).toMatchObject({
          code: "invalid_argument",
          message: `url: 127.0.0.1 is an internal address; ALERT_PRIVATE_URLS=true allows it`,
        });
      }
      expect((await owner.ok("AlertService/ListDestinations", {})).destinations ?? []).toEqual([]);
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
