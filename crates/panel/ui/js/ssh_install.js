// Installing a server's node over SSH: the address, login and a password or private
// key; the panel reads the server's host key for the operator to confirm; then every
// step with its state and output, polled live. The password or key is sent with the
// confirmed request only, and the form forgets it then.

import { h, fill, field, dialog, showError } from "./dom.js";
import { get, post } from "./api.js";
import { t, msg } from "./i18n.js";

const STEP_NAMES = {
  connecting: msg("Connecting"),
  host_key: msg("Host key"),
  checking: msg("Checking the system"),
  uploading: msg("Uploading"),
  installing: msg("Installing"),
  joining: msg("Joining"),
  firewall: msg("Firewall"),
  online: msg("Online"),
};

const STATE_NAMES = { pending: msg("pending"), running: msg("running…"), done: msg("done"), failed: msg("failed") };

/** The job's steps, each with its state and output. */
function stepList(job) {
  return h("ol", { class: "ssh-steps", "data-ssh-steps": "" }, job.steps.map((s) =>
    h("li", { class: `ssh-step ${s.state}`, "data-step": s.name, "data-state": s.state },
      h("strong", {}, STEP_NAMES[s.name] ? t(STEP_NAMES[s.name]) : s.name), " ",
      h("span", { class: "muted" }, STATE_NAMES[s.state] ? t(STATE_NAMES[s.state]) : s.state),
      s.output ? h("pre", { class: "ssh-output" }, s.output) : null)));
}

/** Polls the server's job until it has ended, drawing it into `out`; the last job. */
async function follow(server, out) {
  for (;;) {
    const job = await get(`/servers/${server.id}/ssh-install`);
    fill(out, stepList(job), job.error ? h("p", { class: "bad", role: "alert", "data-ssh-error": "" }, job.error) : null);
    if (job.state !== "running") return job;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** The dialog: form, host key confirmation, then the steps. */
export function sshInstall(server, reload) {
  return dialog(t("Install {name} over SSH", { name: server.name }), (close) => {
    const address = h("input", { name: "address", required: true, maxlength: 261, value: server.address, placeholder: t("host or host:port") });
    const user = h("input", { name: "user", required: true, maxlength: 64, value: "root", autocomplete: "off" });
    const how = h("select", { name: "auth", "aria-label": t("Log in with") },
      h("option", { value: "password" }, t("Password")), h("option", { value: "key" }, t("Private key")));
    const password = h("input", { name: "password", type: "password", maxlength: 1024, autocomplete: "off" });
    const key = h("textarea", { name: "private_key", rows: 5, maxlength: 16384, spellcheck: "false",
      placeholder: "-----BEGIN OPENSSH PRIVATE KEY-----" });
    const passphrase = h("input", { name: "passphrase", type: "password", maxlength: 1024, autocomplete: "off" });
    const firewall = h("input", { type: "checkbox", name: "firewall" });
    const passwordBox = field(t("Password"), password, t("Used once for this install, never stored."));
    const keyBox = h("div", { hidden: true }, field(t("Private key"), key, t("OpenSSH form; used once, never stored.")),
      field(t("Passphrase (if the key has one)"), passphrase));
    how.addEventListener("change", () => {
      passwordBox.hidden = how.value !== "password";
      keyBox.hidden = how.value !== "key";
    });
    const out = h("div", { class: "ssh-job", "aria-live": "polite" });
    const submit = h("button", { type: "submit", class: "primary", "data-ssh-connect": "" }, t("Connect"));
    const form = h("form", { "aria-label": t("Install over SSH"), "data-ssh-form": "" },
      field(t("SSH address"), address, t("The server's SSH address; port 22 unless given.")),
      field(t("Login"), user, t("root, or a user who may sudo without a password.")),
      field(t("Log in with"), how), passwordBox, keyBox,
      h("label", { class: "check" }, firewall, " ", t("Firewall: leave only SSH, the inbounds' and the tunnels' ports open (nftables)")),
      h("p", { class: "form-error", role: "alert" }),
      out,
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => { reload(true); close(true); } }, t("Close")),
        submit));
    let confirmed = null;
    const credentials = () => how.value === "password"
      ? { password: password.value }
      : { private_key: key.value, ...(passphrase.value ? { passphrase: passphrase.value } : {}) };
    const forget = () => { password.value = ""; key.value = ""; passphrase.value = ""; };
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      submit.disabled = true;
      try {
        const base = { address: address.value.trim(), user: user.value.trim() };
        if (!confirmed) {
          // First the host key alone: nothing secret goes to a server not yet confirmed.
          await post(`/servers/${server.id}/ssh-install`, base);
          const job = await follow(server, out);
          if (job.state === "confirm_host_key") {
            confirmed = job.host_key.fingerprint;
            out.append(h("p", { class: "notice", "data-host-key": confirmed },
              t("The server's host key is {algorithm} {fingerprint}. Compare it with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the server before you install.",
                { algorithm: job.host_key.algorithm, fingerprint: confirmed })));
            submit.textContent = t("Confirm the key and install");
          }
        } else {
          const body = { ...base, ...credentials(), host_key: confirmed, firewall: firewall.checked };
          const started = post(`/servers/${server.id}/ssh-install`, body);
          forget();
          await started;
          const job = await follow(server, out);
          if (job.state === "online") submit.hidden = true;
          else { confirmed = null; submit.textContent = t("Connect"); }
        }
      } catch (err) {
        showError(form, err);
      } finally {
        submit.disabled = false;
      }
    });
    return form;
  });
}
