// The job-control buttons: only the actions the job's state allows, and only for an admin.
// A refusal (409: the state changed meanwhile) shows the API's message and the buttons the
// new state allows.

import { api, describe } from "../api.js";
import { fill, h } from "../dom.js";
import { isAdmin } from "../session.js";

const LABELS = {
  pause: "Pause",
  resume: "Resume",
  cancel: "Cancel",
  retry: "Retry",
  "force-run": "Run now",
};

export function actionPath(jobId, action) {
  return action === "force-run" ? `/api/v2/jobs/${jobId}/force-run` : `/api/v1/jobs/${jobId}/${action}`;
}

/** Buttons for `job`; onChange(job) after a change, onError(text) on a refusal. */
export function jobActions(job, { onChange, onError }) {
  const box = h("div", { class: "actions", "data-testid": `actions-${job.id}` });
  if (!isAdmin()) return box;
  const draw = (current) => {
    fill(box, current.allowed_actions.map((action) => h("button", {
      type: "button",
      class: action === "cancel" ? "danger" : "",
      "data-action": action,
      "aria-label": `${LABELS[action] || action} job ${current.id}`,
      onclick: async (event) => {
        event.target.disabled = true;
        try {
          const changed = await api(actionPath(current.id, action), { method: "POST" });
          onError?.("");
          onChange(changed);
        } catch (exc) {
          onError?.(describe(exc));
          if (exc.status === 409 && exc.details?.allowed_actions) {
            onChange({ ...current, status: exc.details.state, allowed_actions: exc.details.allowed_actions });
          } else {
            event.target.disabled = false;
          }
        }
      },
    }, LABELS[action] || action)));
  };
  draw(job);
  return box;
}
