// Upgrading nodes to the binary this panel hands out: one server, or every server
// that runs another binary, one at a time. The steps (uploading, switching, online)
// are polled live; nobody's connection is dropped (the node's old process drains).

import { h, fill, dialog, showError, confirmAction } from "./dom.js";
import { get, post } from "./api.js";
import { t, msg } from "./i18n.js";

const STEP_NAMES = { uploading: msg("Uploading the binary"), switching: msg("Switching to it"), online: msg("Back online") };
const STATE_NAMES = { pending: msg("pending"), running: msg("running…"), done: msg("done"), failed: msg("failed") };

/** A job's steps, each with its state and output. */
export function upgradeSteps(job) {
  return h("ol", { class: "ssh-steps", "data-upgrade-steps": job.server_id }, job.steps.map((s) =>
    h("li", { class: `ssh-step ${s.state}`, "data-step": s.name, "data-state": s.state },
      h("strong", {}, STEP_NAMES[s.name] ? t(STEP_NAMES[s.name]) : s.name), " ",
      h("span", { class: "muted" }, STATE_NAMES[s.state] ? t(STATE_NAMES[s.state]) : s.state),
      s.output ? h("pre", { class: "ssh-output" }, s.output) : null)));
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls the server's job until it ended, drawing it into `out`; the last job. */
async function follow(serverId, out) {
  for (;;) {
    const job = await get(`/servers/${serverId}/upgrade`);
    fill(out, upgradeSteps(job), job.error ? h("p", { class: "bad", role: "alert", "data-upgrade-error": "" }, job.error) : null);
    if (job.state !== "running") return job;
    await pause(1000);
  }
}

const WHAT = msg("The node gets this panel's binary over its channel and hands its connections to it: nobody is dropped (the old process serves its open connections for up to 10 minutes). The node keeps running it after restarts, until `switchyard node upgrade --binary` or `node install` on the server.");

/** Upgrades one server, after a confirmation, showing its steps live. */
export async function upgradeServer(server, reload) {
  const ok = await confirmAction(t("Upgrade {name}?", { name: server.name }), t(WHAT), t("Upgrade"));
  if (!ok) return;
  return dialog(t("Upgrading {name}", { name: server.name }), (close) => {
    const out = h("div", { class: "ssh-job", "aria-live": "polite" });
    const box = h("div", { "data-upgrade-job": server.id }, h("p", { class: "form-error", role: "alert" }), out,
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", onclick: () => { reload(true); close(true); } }, t("Close"))));
    (async () => {
      try {
        await post(`/servers/${server.id}/upgrade`);
        await follow(server.id, out);
      } catch (err) { showError(box, err); }
    })();
    return box;
  });
}

/** Upgrades every server that runs another binary, one at a time, showing each. */
export async function upgradeAll(reload) {
  const ok = await confirmAction(t("Upgrade every server?"),
    t("The node gets this panel's binary over its channel and hands its connections to it: nobody is dropped (the old process serves its open connections for up to 10 minutes). The node keeps running it after restarts, until `switchyard node upgrade --binary` or `node install` on the server. Servers are upgraded one at a time, each back online before the next; the first failure stops it."),
    t("Upgrade all"));
  if (!ok) return;
  return dialog(t("Upgrading every server"), (close) => {
    const head = h("p", { "data-upgrade-all": "" }, t("Starting…"));
    const out = h("div", { class: "ssh-job", "aria-live": "polite" });
    const box = h("div", {}, h("p", { class: "form-error", role: "alert" }), head, out,
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", onclick: () => { reload(true); close(true); } }, t("Close"))));
    (async () => {
      try {
        await post("/servers/upgrade");
        for (;;) {
          const all = await get("/servers/upgrade");
          const said = all.servers.length
            ? t("{done} of {n} servers upgraded", { done: all.upgraded.length, n: all.servers.length })
            : (all.state === "running" ? t("Looking for servers to upgrade…") : t("Every online server already runs this panel's binary."));
          fill(head, said);
          head.dataset.state = all.state;
          if (all.current != null) {
            const job = await get(`/servers/${all.current}/upgrade`).catch(() => null);
            if (job) fill(out, upgradeSteps(job));
          }
          if (all.error) out.append(h("p", { class: "bad", role: "alert", "data-upgrade-error": "" }, all.error));
          if (all.state !== "running") return;
          await pause(1000);
        }
      } catch (err) { showError(box, err); }
    })();
    return box;
  });
}
