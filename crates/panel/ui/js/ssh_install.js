// Installing a server's node over SSH: the address, login and a password or private
// key; the panel reads the server's host key for the operator to confirm; then every
// step with its state and output, polled live. The password or key is sent with the
// confirmed request only, and the form forgets it then.

import { h, fill, field, dialog, showError } from "./dom.js";
import { get, post } from "./api.js";

const STEP_NAMES = {
  connecting: "Connecting",
  host_key: "Host key",
  checking: "Checking the system",
  uploading: "Uploading",
  installing: "Installing",
  joining: "Joining",
  firewall: "Firewall",
  online: "Online",
};

const STATE_NAMES = { pending: "pending", running: "running…", done: "done", failed: "failed" };

/** The job's steps, each with its state and output. */
function stepList(job) {
  return h("ol", { class: "ssh-steps", "data-ssh-steps": "" }, job.steps.map((s) =>
    h("li", { class: `ssh-step ${s.state}`, "data-step": s.name, "data-state": s.state },
      h("strong", {}, STEP_NAMES[s.name] || s.name), " ",
      h("span", { class: "muted" }, STATE_NAMES[s.state] || s.state),
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
  return dialog(`Install ${server.name} over SSH`, (close) => {
    const address = h("input", { name: "address", required: true, maxlength: 261, value: server.address, placeholder: "host or host:port" });
    const user = h("input", { name: "user", required: true, maxlength: 64, value: "root", autocomplete: "off" });
    const how = h("select", { name: "auth", "aria-label": "Log in with" },
      h("option", { value: "password" }, "Password"), h("option", { value: "key" }, "Private key"));
    const password = h("input", { name: "password", type: "password", maxlength: 1024, autocomplete: "off" });
    const key = h("textarea", { name: "private_key", rows: 5, maxlength: 16384, spellcheck: "false",
      placeholder: "-----BEGIN OPENSSH PRIVATE KEY-----" });
    const passphrase = h("input", { name: "passphrase", type: "password", maxlength: 1024, autocomplete: "off" });
    const firewall = h("input", { type: "checkbox", name: "firewall" });
    const passwordBox = field("Password", password, "Used once for this install, never stored.");
    const keyBox = h("div", { hidden: true }, field("Private key", key, "OpenSSH form; used once, never stored."),
      field("Passphrase (if the key has one)", passphrase));
    how.addEventListener("change", () => {
      passwordBox.hidden = how.value !== "password";
      keyBox.hidden = how.value !== "key";
    });
    const out = h("div", { class: "ssh-job", "aria-live": "polite" });
    const submit = h("button", { type: "submit", class: "primary", "data-ssh-connect": "" }, "Connect");
    const form = h("form", { "aria-label": "Install over SSH", "data-ssh-form": "" },
      field("SSH address", address, "The server's SSH address; port 22 unless given."),
      field("Login", user, "root, or a user who may sudo without a password."),
      field("Log in with", how), passwordBox, keyBox,
      h("label", { class: "check" }, firewall, " Firewall: leave only SSH, the inbounds' and the tunnels' ports open (nftables)"),
      h("p", { class: "form-error", role: "alert" }),
      out,
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => { reload(true); close(true); } }, "Close"),
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
              `The server's host key is ${job.host_key.algorithm} ${confirmed}. ` +
              "Compare it with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the server before you install."));
            submit.textContent = "Confirm the key and install";
          }
        } else {
          const body = { ...base, ...credentials(), host_key: confirmed, firewall: firewall.checked };
          const started = post(`/servers/${server.id}/ssh-install`, body);
          forget();
          await started;
          const job = await follow(server, out);
          if (job.state === "online") submit.hidden = true;
          else { confirmed = null; submit.textContent = "Connect"; }
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
