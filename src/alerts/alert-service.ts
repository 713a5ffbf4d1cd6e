import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { type AlertEvent, AlertEventSchema, AlertKind, type AlertRule, AlertScopeKind } from "../../gen/calltrace/v1/alert_pb.js";
import {
  type AlertDelivery,
  AlertDeliverySchema,
  AlertDeliveryState,
  type AlertDestination,
  AlertDestinationKind,
  AlertDestinationSchema,
  type AlertRuleValue,
  type AlertService,
} from "../../gen/calltrace/v1/alert_service_pb.js";
import type { AlertStore, DeliveryRecord, DestinationKind, DestinationRecord } from "../store/alert-store.js";
import { newId } from "../store/ids.js";
import type { KeyStore } from "../store/key-store.js";
import { notFound, projectAccess } from "../teams/access.js";
import type { AuditTrail } from "../teams/audit-trail.js";
import { DestinationError, type Destinations } from "./destinations.js";
import { RuleError, validRule } from "./rule-validation.js";

export interface AlertServiceDeps {
  alerts: AlertStore;
  keys: KeyStore;
  destinations: Destinations;
  audit: AuditTrail;
  /** Told when something became due to send here (an enqueue, a resend), so it goes out now rather than at the next poll. */
  onDue?: (() => void) | undefined;
  /** Each rule's current value, from the evaluation; without it, ListRules answers none. */
  ruleValues?: ((projectId: string, rules: AlertRule[]) => Promise<AlertRuleValue[]>) | undefined;
}

const kindOf: Record<DestinationKind, AlertDestinationKind> = {
  webhook: AlertDestinationKind.WEBHOOK,
  slack: AlertDestinationKind.SLACK,
  email: AlertDestinationKind.EMAIL,
};
const kindFrom: Partial<Record<AlertDestinationKind, DestinationKind>> = {
  [AlertDestinationKind.WEBHOOK]: "webhook",
  [AlertDestinationKind.SLACK]: "slack",
  [AlertDestinationKind.EMAIL]: "email",
};
const stateOf = {
  pending: AlertDeliveryState.PENDING,
  delivered: AlertDeliveryState.DELIVERED,
  failed: AlertDeliveryState.FAILED,
} as const;

/** AlertService (proto/calltrace/v1/alert_service.proto): access is decided by the interceptor (rpc-policies.ts). */
export function alertService(deps: AlertServiceDeps): ServiceImpl<typeof AlertService> {
  const { alerts } = deps;
  const references = (projectId: string) => ({
    hasKey: async (id: string) => (await deps.keys.listKeys(projectId)).some((k) => k.id === id),
    hasDestination: async (id: string) => (await alerts.getDestination(projectId, id)) !== undefined,
  });
  const checked = async (rule: AlertRule, projectId: string) => {
    try {
      return await validRule(rule, references(projectId));
    } catch (error) {
      if (error instanceof RuleError) throw new ConnectError(error.message, Code.InvalidArgument);
      throw error;
    }
  };
  const ownRule = async (projectId: string, ruleId: string) => {
    const rule = await alerts.getRule(projectId, ruleId);
    if (!rule) throw notFound("rule", ruleId);
    return rule;
  };
  const ownDestination = async (projectId: string, id: string) => {
    const destination = await alerts.getDestination(projectId, id);
    if (!destination) throw notFound("destination", id);
    return destination;
  };
  const limitOf = (limit: number) => limit || 50;

  return {
    async listRules(_request, context) {
      const projectId = projectAccess(context).project.id;
      const rules = await alerts.listRules(projectId);
      return { rules, values: (await deps.ruleValues?.(projectId, rules)) ?? [] };
    },
    async createRule(request, context) {
      const access = projectAccess(context);
      const projectId = access.project.id;
      const rule = await checked({ ...request.rule!, id: newId("alr"), projectId, createdAt: timestampFromDate(new Date()) }, projectId);
      await alerts.createRule(rule);
      await deps.audit(access, "alert.rule.create", rule.id, { name: rule.name });
      return { rule };
    },
    async updateRule(request, context) {
      const access = projectAccess(context);
      const projectId = access.project.id;
      const current = await ownRule(projectId, request.rule!.id);
      const rule = await checked({ ...request.rule!, projectId, createdAt: current.createdAt }, projectId);
      if (!(await alerts.updateRule(rule))) throw notFound("rule", rule.id);
      await deps.audit(access, "alert.rule.update", rule.id, { name: rule.name });
      return { rule };
    },
    async muteRule(request, context) {
      const access = projectAccess(context);
      const rule = { ...(await ownRule(access.project.id, request.ruleId)), muted: request.muted };
      if (!(await alerts.updateRule(rule))) throw notFound("rule", rule.id);
      await deps.audit(access, request.muted ? "alert.rule.mute" : "alert.rule.unmute", rule.id, { name: rule.name });
      return { rule };
    },
    async deleteRule(request, context) {
      const access = projectAccess(context);
      if (!(await alerts.deleteRule(access.project.id, request.ruleId))) throw notFound("rule", request.ruleId);
      await deps.audit(access, "alert.rule.delete", request.ruleId);
      return {};
    },
    async listEvents(request, context) {
      const projectId = projectAccess(context).project.id;
      const events = await alerts.listEvents(projectId, {
        ruleId: request.ruleId || undefined,
        limit: limitOf(request.limit),
        before: request.before || undefined,
      });
      return { events };
    },
    async listDestinations(_request, context) {
      return { destinations: (await alerts.listDestinations(projectAccess(context).project.id)).map(destinationMessage) };
    },
    async createDestination(request, context) {
      const access = projectAccess(context);
      const kind = kindFrom[request.kind];
      if (!kind) throw new ConnectError("kind: must be webhook, slack or email", Code.InvalidArgument);
      try {
        const { destination, secret } = await deps.destinations.create(access.project.id, {
          kind,
          name: request.name,
          url: request.url,
          emails: request.emails,
        });
        await deps.audit(access, "alert.destination.create", destination.id, { kind, name: destination.name });
        return { destination: destinationMessage(destination), secret };
      } catch (error) {
        if (error instanceof DestinationError) throw new ConnectError(error.message, Code.InvalidArgument);
        throw error;
      }
    },
    async deleteDestination(request, context) {
      const access = projectAccess(context);
      if (!(await alerts.deleteDestination(access.project.id, request.destinationId))) throw notFound("destination", request.destinationId);
      await deps.audit(access, "alert.destination.delete", request.destinationId);
      return {};
    },
    async rotateDestinationSecret(request, context) {
      const access = projectAccess(context);
      const current = await ownDestination(access.project.id, request.destinationId);
      if (current.kind !== "webhook")
        throw new ConnectError("destination_id: only a webhook has a signing secret", Code.FailedPrecondition);
      const rotated = await deps.destinations.rotate(access.project.id, current.id);
      if (!rotated) throw notFound("destination", request.destinationId);
      await deps.audit(access, "alert.destination.rotate", current.id);
      return { destination: destinationMessage(rotated.destination), secret: rotated.secret };
    },
    async enableDestination(request, context) {
      const access = projectAccess(context);
      const enabled = await alerts.enableDestination(access.project.id, request.destinationId);
      if (!enabled) throw notFound("destination", request.destinationId);
      await deps.audit(access, "alert.destination.enable", enabled.id);
      deps.onDue?.();
      return { destination: destinationMessage(enabled) };
    },
    async listDeliveries(request, context) {
      const projectId = projectAccess(context).project.id;
      const deliveries = await alerts.listDeliveries(projectId, { eventId: request.eventId || undefined, limit: limitOf(request.limit) });
      return { deliveries: deliveries.map(deliveryMessage) };
    },
    async resendDelivery(request, context) {
      const access = projectAccess(context);
      const delivery = await alerts.resendDelivery(access.project.id, request.deliveryId);
      if (!delivery) throw notFound("delivery", request.deliveryId);
      await deps.audit(access, "alert.delivery.resend", delivery.id);
      deps.onDue?.();
      return { delivery: deliveryMessage(delivery) };
    },
    async sendTestEvent(request, context) {
      const access = projectAccess(context);
      const destination = await ownDestination(access.project.id, request.destinationId);
      const event = testEvent(access.project.id);
      await alerts.enqueueEvent(event, [destination.id]);
      deps.onDue?.();
      return { event };
    },
  };
}

/** An `alert.test` event: a spend rule's 80 % crossing, made up, so receivers see a realistic body. */
function testEvent(projectId: string): AlertEvent {
  const now = new Date();
  const dayStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  return create(AlertEventSchema, {
    id: newId("evt"),
    projectId,
    ruleName: "test event",
    kind: AlertKind.SPEND,
    scope: { kind: AlertScopeKind.PROJECT },
    windowStart: timestampFromDate(dayStart),
    windowEnd: timestampFromDate(new Date(dayStart.getTime() + 86_400_000)),
    thresholdPercent: 80,
    thresholdValue: 8,
    measuredValue: 8.5,
    firedAt: timestampFromDate(now),
    test: true,
  });
}

const at = (date: Date | undefined) => (date ? timestampFromDate(date) : undefined);

function destinationMessage(d: DestinationRecord): AlertDestination {
  const previous = d.secrets.find((s) => s.expiresAt && s.expiresAt > new Date());
  return create(AlertDestinationSchema, {
    id: d.id,
    projectId: d.projectId,
    kind: kindOf[d.kind],
    name: d.name,
    url: d.url,
    emails: d.emails,
    createdAt: timestampFromDate(d.createdAt),
    failingSince: at(d.failingSince),
    disabledAt: at(d.disabledAt),
    disabledReason: d.disabledReason,
    previousSecretExpiresAt: at(previous?.expiresAt),
  });
}

function deliveryMessage(d: DeliveryRecord): AlertDelivery {
  return create(AlertDeliverySchema, {
    id: d.id,
    eventId: d.eventId,
    destinationId: d.destinationId,
    state: stateOf[d.state],
    nextAttemptAt: d.state === "pending" ? timestampFromDate(d.nextAttemptAt) : undefined,
    createdAt: timestampFromDate(d.createdAt),
    attempts: d.attempts.map((a) => ({ ...a, at: timestampFromDate(a.at) })),
  });
}
