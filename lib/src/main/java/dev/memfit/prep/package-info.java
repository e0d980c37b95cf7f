/**
 * Preprocessing done once, offline: the feature cache (computed in batches, checked by manifest and checksum).
 */
package dev.memfit.prep;
