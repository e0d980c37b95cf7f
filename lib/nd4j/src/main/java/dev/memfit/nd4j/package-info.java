/**
 * ND4J interop (module {@code memfit-nd4j}, opt-in): memfit batches and {@code .npy} arrays as ND4J arrays without a
 * copy.
 */
package dev.memfit.nd4j;
