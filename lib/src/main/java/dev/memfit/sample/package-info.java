/**
 * Samplers: which samples an epoch visits and in which order (sequential, seeded shuffle).
 */
package dev.memfit.sample;
