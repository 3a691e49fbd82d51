"""The business dashboard's pages, one module per area (docs/architecture.md): thin views
that call the onboarding, billing and order services."""
