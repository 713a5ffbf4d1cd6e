import { fromJsonString, toJsonString } from "@bufbuild/protobuf";
import { type AlertEvent, AlertEventSchema, type AlertRule, AlertRuleSchema } from "../../gen/calltrace/v1/alert_pb.js";

/**
 * Rules and events are kept as their protobuf JSON, so that fields added to the contract later
 * need no migration; unknown fields (from a newer release) are ignored on reading.
 */
export const ruleToJson = (rule: AlertRule): string => toJsonString(AlertRuleSchema, rule);
export const ruleFromJson = (json: string): AlertRule => fromJsonString(AlertRuleSchema, json, { ignoreUnknownFields: true });
export const eventToJson = (event: AlertEvent): string => toJsonString(AlertEventSchema, event);
export const eventFromJson = (json: string): AlertEvent => fromJsonString(AlertEventSchema, json, { ignoreUnknownFields: true });

/** The id of the one delivery of an event to a destination. */
export const deliveryId = (eventId: string, destinationId: string): string => `${eventId}.${destinationId}`;
