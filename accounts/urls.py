"""Dashboard routes (server-rendered pages for business users)."""

urlpatterns: list = []
