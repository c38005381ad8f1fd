// The manager's REST API (spec/manager-api.md): JSON in and out, the CSRF
// token on every state-changing request, errors as ApiError with the API's
// stable code and its message for people.

import type { Session } from "./types";

export const API = "/api/v1";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> | undefined,
  ) {
    super(message);
  }
}

let session: Session | null = null;
let onUnauthenticated: (code: string) => void = () => {};

export function currentSession(): Session | null {
  return session;
}

export function setSession(s: Session | null): void {
  session = s;
}

/** Called when the API answers 401 (not logged in, session expired). */
export function setUnauthenticatedHandler(f: (code: string) => void): void {
  onUnauthenticated = f;
}

async function toError(resp: Response): Promise<ApiError> {
  let code = "http_" + resp.status;
  let message = `${resp.status} ${resp.statusText}`;
  let details: Record<string, unknown> | undefined;
  try {
    const body = (await resp.json()) as { error?: { code?: string; message?: string; details?: Record<string, unknown> } };
    if (body.error) {
      code = body.error.code ?? code;
      message = body.error.message ?? message;
      details = body.error.details;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(resp.status, code, message, details);
}

/** Calls `method path` (path under /api/v1). Throws ApiError. */
export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  const init: RequestInit = { method, headers, credentials: "same-origin" };
  if (method !== "GET" && method !== "HEAD") {
    headers["Content-Type"] = "application/json";
    if (session) headers["X-CSRF-Token"] = session.csrf_token;
    init.body = JSON.stringify(body ?? {});
  }
  let resp: Response;
  try {
    resp = await fetch(API + path, init);
  } catch (e) {
    throw new ApiError(0, "network", `The manager cannot be reached (${String(e)}).`, undefined);
  }
  if (!resp.ok) {
    const err = await toError(resp);
    if (resp.status === 401 && path !== "/login" && path !== "/session") onUnauthenticated(err.code);
    throw err;
  }
  if (resp.status === 204) return undefined as T;
  const text = await resp.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(path: string): Promise<T> => call<T>("GET", path);
export const post = <T>(path: string, body?: unknown): Promise<T> => call<T>("POST", path, body);
export const put = <T>(path: string, body?: unknown): Promise<T> => call<T>("PUT", path, body);
export const patch = <T>(path: string, body?: unknown): Promise<T> => call<T>("PATCH", path, body);
export const del = <T>(path: string): Promise<T> => call<T>("DELETE", path);

/** The message to show for any thrown value. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

/** The API's JSON list, whether bare or wrapped in an object. */
export function asList<T>(v: unknown, key?: string): T[] {
  if (Array.isArray(v)) return v as T[];
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    for (const k of [key, "items", "data"]) {
      if (k && Array.isArray(o[k])) return o[k] as T[];
    }
  }
  return [];
}
