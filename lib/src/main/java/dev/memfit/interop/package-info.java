/**
 * Interoperability: memfit batches and {@code .npy} arrays as ND4J arrays.
 */
package dev.memfit.interop;
