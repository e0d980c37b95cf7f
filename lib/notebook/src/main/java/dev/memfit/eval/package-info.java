/**
 * Scores against known answers: topic recovery after optimal matching, and latent-space projections and linear
 * separability.
 */
package dev.memfit.eval;
