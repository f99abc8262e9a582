// The job-control buttons: only the actions the job's state allows, and only for an admin.
// Cancelling asks first. A refusal (409: the state changed meanwhile) shows the API's message
// and the buttons the new state allows.

import { api, describe } from "../api.js";
import { confirmAction } from "../confirm.js";
import { fill, h } from "../dom.js";
import { isAdmin } from "../session.js";

// "Cancel job", not "Cancel": a form's way out sits on the same page.
const LABELS = {
  pause: "Pause",
  resume: "Resume",
  cancel: "Cancel job",
  retry: "Retry",
  "force-run": "Run now",
};

/** Ask before a cancel: it stops a run under way (the pages fetched so far stay stored). */
function confirmCancel(job) {
  return confirmAction({
    question: `Cancel job ${job.id}?`,
    detail: job.status === "running"
      ? "The run under way stops now; the pages it stored stay. The job runs again only when you resume it or run it now."
      : "The job will not run until you resume it or run it now. Its settings and history stay.",
    confirmLabel: `Yes, cancel job ${job.id}`,
    keepLabel: "Keep the job",
  });
}

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
      "aria-label": `${action === "cancel" ? "Cancel" : LABELS[action] || action} job ${current.id}`,
      onclick: async (event) => {
        const button = event.currentTarget;
        if (action === "cancel" && !(await confirmCancel(current))) return;
        button.disabled = true;
        try {
          const changed = await api(actionPath(current.id, action), { method: "POST" });
          onError?.("");
          onChange(changed);
        } catch (exc) {
          onError?.(describe(exc));
          if (exc.status === 409 && exc.details?.allowed_actions) {
            onChange({ ...current, status: exc.details.state, allowed_actions: exc.details.allowed_actions });
          } else {
            button.disabled = false;
          }
        }
      },
    }, LABELS[action] || action)));
  };
  draw(job);
  return box;
}
