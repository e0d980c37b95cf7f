/**
 * Plots: XChart chart factories returning {@link java.awt.image.BufferedImage} for inline display.
 */
package dev.memfit.plot;
