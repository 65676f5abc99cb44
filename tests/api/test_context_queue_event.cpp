// Differential tests: to be written.
