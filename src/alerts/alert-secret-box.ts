import type { Config } from "../config/config.js";
import type { Logger } from "../log/logger.js";
import type { AlertStore } from "../store/alert-store.js";
import { parseSecretKey, type SecretBox, secretBox } from "./secret-box.js";

/**
 * The box that seals webhook secrets: under ALERT_SECRET_KEY when it is set, otherwise under the
 * key the store keeps (docs/alerts.md#signing).
 */
export async function openAlertSecretBox(
  config: Pick<Config, "alertSecretKey" | "mongodbUri">,
  store: AlertStore,
  logger?: Logger,
): Promise<SecretBox> {
  if (config.alertSecretKey) return secretBox(parseSecretKey(config.alertSecretKey));
  if (config.mongodbUri)
    logger?.warn("ALERT_SECRET_KEY is not set: webhook secrets are sealed with a key kept in the MongoDB database itself");
  return secretBox(await store.defaultSecretKey());
}
