// A button with data-copy="<id>" copies that field's value to the clipboard.
(function () {
  function say(text) {
    const state = document.getElementById("copy-state");
    if (state) state.textContent = text;
  }

  function copyBySelection(field) {
    field.focus();
    field.select();
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const field = document.getElementById(button.dataset.copy);
    if (!field) return;
    const done = function () { say("Copied to the clipboard."); };
    const fallback = function () {
      if (copyBySelection(field)) done();
      else say("Copying was refused: the token is selected, press Ctrl+C.");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, fallback);
    } else {
      fallback();
    }
  });
})();
