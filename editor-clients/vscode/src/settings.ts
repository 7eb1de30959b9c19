// The settings the server gets, independent of VS Code: built from the `filescout.*`
// configuration and the API key kept in VS Code's secret storage, for `initializationOptions`
// at start and `workspace/didChangeConfiguration` on every change.

import { Settings } from "./protocol";

/** Where the "filescout: Set API Key" command keeps the key (`ExtensionContext.secrets`). */
export const API_KEY_SECRET = "filescout.model.apiKey";

/** The part of a `vscode.WorkspaceConfiguration` (section `filescout`) read here. */
export interface ConfigurationReader {
  get<T>(key: string): T | undefined;
}

function present<T>(value: T | null | undefined): T | undefined {
  return value === null || value === undefined ? undefined : value;
}

/** The stored key when there is one, else the `filescout.model.apiKey` setting. */
export function effectiveApiKey(secret: string | undefined, setting: string | null | undefined): string | undefined {
  const stored = secret?.trim();
  return stored ? stored : present(setting) || undefined;
}

/** The `filescout.*` settings the server understands (client-only ones left out: the server
 * rejects unknown fields), with the stored API key in place of the setting's. */
export function serverSettings(config: ConfigurationReader, apiKeySecret?: string): Settings {
  return {
    exclude: config.get<string[]>("exclude") ?? [],
    include: config.get<string[]>("include") ?? [],
    maxFileSize: config.get<number>("maxFileSize") ?? 1048576,
    privacyMode: config.get<boolean>("privacyMode") ?? false,
    model: {
      model: present(config.get<string | null>("model.model")),
      baseUrl: present(config.get<string | null>("model.baseUrl")),
      apiKey: effectiveApiKey(apiKeySecret, config.get<string | null>("model.apiKey")),
      concurrency: config.get<number>("model.concurrency") ?? 2,
      images: config.get<boolean>("model.images") ?? false,
      imageTokens: present(config.get<number | null>("model.imageTokens")),
    },
    budget: {
      dailyTokens: present(config.get<number | null>("budget.dailyTokens")),
      monthlyTokens: present(config.get<number | null>("budget.monthlyTokens")),
    },
    sharedCache: {
      url: present(config.get<string | null>("sharedCache.url")),
      mode: config.get<"read_write" | "read_only" | "off">("sharedCache.mode") ?? "read_write",
    },
  };
}

/** The `workspace/didChangeConfiguration` params that carry `settings` to the server. */
export function configurationChange(settings: Settings): { settings: { filescout: Settings } } {
  return { settings: { filescout: settings } };
}
