"""The pure core: everything that computes, nothing that orchestrates. Never imports dagster."""
