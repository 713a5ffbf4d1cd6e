import type { Logger } from "../log/logger.js";
import type { KeyStore } from "../store/key-store.js";
import type { TeamStore } from "../store/team-store.js";

/**
 * After a project is deleted, traces its keys sent just before (still in a write queue, or
 * accepted by another instance whose key cache had not yet expired) may land; one more sweep
 * after this long removes them.
 */
const stragglerSweepMs = 15_000;

export interface ProjectDeletionDeps {
  teams: TeamStore;
  keys: KeyStore;
  /** Told the hashes of keys that stopped working here, so this process's key cache forgets them at once. */
  onKeysRevoked?: ((hashes: string[]) => void) | undefined;
  logger?: Logger | undefined;
}

/** Deletes projects (or a whole organization) with their keys and traces, and sweeps once more for stragglers. */
export function projectDeletion(deps: ProjectDeletionDeps) {
  const forgetKeys = async (projectIds: string[]) => {
    const hashes = (await Promise.all(projectIds.map((id) => deps.keys.listKeys(id)))).flat().map((k) => k.hash);
    deps.onKeysRevoked?.(hashes);
    return hashes.length;
  };
  const sweepLater = (what: string, sweep: () => Promise<unknown>) =>
    setTimeout(() => void sweep().catch((error: unknown) => deps.logger?.warn({ err: error }, `second sweep of a deleted ${what} failed`)), stragglerSweepMs).unref();
  return {
    async deleteProject(projectId: string): Promise<boolean> {
      const keys = await forgetKeys([projectId]);
      const deleted = await deps.teams.deleteProject(projectId);
      sweepLater("project", () => deps.teams.deleteProject(projectId));
      deps.logger?.info({ projectId, keys }, "project deleted");
      return deleted;
    },
    async deleteOrganization(organizationId: string): Promise<boolean> {
      const projectIds = (await deps.teams.listProjects(organizationId)).map((p) => p.id);
      const keys = await forgetKeys(projectIds);
      const deleted = await deps.teams.deleteOrganization(organizationId);
      sweepLater("organization", async () => {
        for (const id of projectIds) await deps.teams.deleteProject(id);
      });
      deps.logger?.info({ organizationId, projects: projectIds.length, keys }, "organization deleted");
      return deleted;
    },
  };
}

export type ProjectDeletion = ReturnType<typeof projectDeletion>;
