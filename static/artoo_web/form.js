// Enter submits the task form; Shift+Enter inserts a new line.
document.addEventListener("keydown", function (event) {
  const field = event.target;
  if (field.id !== "id_raw_input" || event.key !== "Enter" || event.shiftKey || event.isComposing) return;
  event.preventDefault();
  field.form.requestSubmit();
});
