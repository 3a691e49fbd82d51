// The copy button of a freshly made API key or signing secret. "Copied" comes in the page's
// language from the dashboard's catalogue (templates/dashboard/_script_words.html).
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
  button.textContent = window.gettext ? window.gettext("Copied") : "Copied";
});
