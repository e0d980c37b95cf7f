/**
 * Preprocessing done once, offline: normalization, log1p and highly variable genes out of core, per-batch gene
 * selection, and the feature cache (computed in batches, checked by manifest and checksum).
 */
package dev.memfit.prep;
