/**
 * What notebooks show: XChart chart factories returning {@link java.awt.image.BufferedImage} for inline display, and
 * {@link dev.memfit.plot.Lesson} checks that fail a run whose measurements contradict the notebook's text.
 */
package dev.memfit.plot;
