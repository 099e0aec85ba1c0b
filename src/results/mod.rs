//! The result store: `results/<scenario>/<run-id>/run.json` and one file per cell.
