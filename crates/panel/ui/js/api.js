// The panel's REST API, as the UI calls it: the session cookie plus the session's
// CSRF token on every write. Errors are thrown as ApiError with the field they name.

import { t } from "./i18n.js";

let csrf = null;

/** An API error: `status`, `message` and, when the API named one, `field`. */
export class ApiError extends Error {
  constructor(status, message, field, errors) {
    super(message);
    this.status = status;
    this.field = field;
    this.errors = errors || [];
  }
}

/** Called when the API answers 401: the session is gone. */
export let onUnauthorized = () => {};
export function setOnUnauthorized(f) { onUnauthorized = f; }

export function setCsrf(token) { csrf = token; }

/** `method` `path` (under /api/v1) with an optional JSON `body`; the JSON answer. */
export async function call(method, path, body) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && csrf) headers["x-csrf-token"] = csrf;
  let res;
  try {
    res = await fetch(`/api/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch (e) {
    throw new ApiError(0, t("The panel did not answer: {error}", { error: e.message }));
  }
  return answer(res, path);
}

/** The JSON of `res`, or the ApiError it carries. */
async function answer(res, path) {
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!res.ok) {
    if (res.status === 401 && path !== "/session") onUnauthorized();
    const errors = (data && data.errors) || [];
    const first = errors[0];
    throw new ApiError(res.status, first ? first.message : (data && data.detail) || `${res.status} ${res.statusText}`,
      first ? first.field : undefined, errors);
  }
  return data;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body === undefined ? {} : body);
export const put = (path, body) => call("PUT", path, body);
export const del = (path) => call("DELETE", path);

/** POSTs the bytes of `file` (a File) to `path` (under /api/v1); the JSON answer. */
export async function upload(path, file) {
  const headers = { accept: "application/json", "content-type": "application/octet-stream" };
  if (csrf) headers["x-csrf-token"] = csrf;
  let res;
  try {
    res = await fetch(`/api/v1${path}`, { method: "POST", headers, body: file, credentials: "same-origin" });
  } catch (e) {
    throw new ApiError(0, t("The panel did not answer: {error}", { error: e.message }));
  }
  return answer(res, path);
}
