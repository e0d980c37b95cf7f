/**
 * The command line ({@code memfit inspect}, {@code bench}, {@code generate}) behind the {@code ./memfit} launcher.
 */
package dev.memfit.cli;
