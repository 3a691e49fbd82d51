// The copy button of a freshly made API key; the only script of the dashboard.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    field.select();  // no clipboard API (plain http): select it so Ctrl+C works
    document.execCommand("copy");
  }
  button.textContent = "Copied";
});
