//! Values with units: sizes (`1GiB`) and durations (`300ms`).
