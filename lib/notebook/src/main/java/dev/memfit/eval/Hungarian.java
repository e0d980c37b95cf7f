package dev.memfit.eval;

import java.util.Arrays;

/**
 * The assignment problem: the one-to-one matching of rows to columns with the largest total score.
 *
 * <p>Written by hand (the O(n^3) Hungarian method with potentials, ~40 lines) because the libraries that offer it
 * (JGraphT and others) would add megabytes for one function.
 */
final class Hungarian {

    private Hungarian() {
    }

    /**
     * Matches each row to a distinct column maximising the sum of scores.
     *
     * @param score a square matrix
     * @return {@code match[row] = column}
     */
    static int[] maximize(double[][] score) {
        int n = score.length;
        double[] u = new double[n + 1];
        double[] v = new double[n + 1];
        int[] p = new int[n + 1];
        int[] way = new int[n + 1];
        for (int i = 1; i <= n; i++) {
            p[0] = i;
            int j0 = 0;
            double[] minv = new double[n + 1];
            Arrays.fill(minv, Double.POSITIVE_INFINITY);
            boolean[] used = new boolean[n + 1];
            do {
                used[j0] = true;
                int i0 = p[j0];
                double delta = Double.POSITIVE_INFINITY;
                int j1 = 0;
                for (int j = 1; j <= n; j++) {
                    if (!used[j]) {
                        double cur = -score[i0 - 1][j - 1] - u[i0] - v[j];
                        if (cur < minv[j]) {
                            minv[j] = cur;
                            way[j] = j0;
                        }
                        if (minv[j] < delta) {
                            delta = minv[j];
                            j1 = j;
                        }
                    }
                }
                for (int j = 0; j <= n; j++) {
                    if (used[j]) {
                        u[p[j]] += delta;
                        v[j] -= delta;
                    } else {
                        minv[j] -= delta;
                    }
                }
                j0 = j1;
            } while (p[j0] != 0);
            do {
                int j1 = way[j0];
                p[j0] = p[j1];
                j0 = j1;
            } while (j0 != 0);
        }
        int[] match = new int[n];
        for (int j = 1; j <= n; j++) {
            match[p[j] - 1] = j - 1;
        }
        return match;
    }
}
