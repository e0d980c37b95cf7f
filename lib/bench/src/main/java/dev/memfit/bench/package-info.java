/**
 * Benchmarks behind {@code ./memfit bench} (module {@code memfit-bench}, not part of the library): memfit measured
 * side by side with the reference implementations (C, numpy, anndata, torch), the slow-storage simulation, and the
 * scenario runners the notebooks use. Runs gcc and python.
 */
package dev.memfit.bench;
