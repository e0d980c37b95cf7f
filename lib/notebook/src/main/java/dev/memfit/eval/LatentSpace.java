package dev.memfit.eval;

import org.apache.commons.math3.linear.Array2DRowRealMatrix;
import org.apache.commons.math3.linear.EigenDecomposition;
import org.apache.commons.math3.linear.RealMatrix;
import org.apache.commons.math3.stat.correlation.Covariance;

/**
 * Looking at latent embeddings: principal components for plots, and how well two known groups separate.
 */
public final class LatentSpace {

    private LatentSpace() {
    }

    /**
     * Projects points onto their first principal components (commons-math3's eigen-decomposition of the covariance).
     *
     * @param points n rows of d values
     * @param components how many components (at most d)
     * @return n rows of {@code components} coordinates
     */
    public static double[][] pca(float[][] points, int components) {
        int n = points.length;
        int d = points[0].length;
        double[][] data = new double[n][d];
        double[] mean = new double[d];
        for (float[] point : points) {
            for (int j = 0; j < d; j++) {
                mean[j] += point[j] / (double) n;
            }
        }
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < d; j++) {
                data[i][j] = points[i][j] - mean[j];
            }
        }
        RealMatrix covariance = new Covariance(new Array2DRowRealMatrix(data, false)).getCovarianceMatrix();
        EigenDecomposition eigen = new EigenDecomposition(covariance);
        double[] values = eigen.getRealEigenvalues();
        Integer[] order = new Integer[d];
        for (int j = 0; j < d; j++) {
            order[j] = j;
        }
        java.util.Arrays.sort(order, (a, b) -> Double.compare(values[b], values[a]));
        double[][] projected = new double[n][components];
        for (int c = 0; c < components; c++) {
            double[] axis = eigen.getEigenvector(order[c]).toArray();
            for (int i = 0; i < n; i++) {
                double dot = 0;
                for (int j = 0; j < d; j++) {
                    dot += data[i][j] * axis[j];
                }
                projected[i][c] = dot;
            }
        }
        return projected;
    }

    /**
     * How well a line separates two labelled groups: the training accuracy of Fisher's linear discriminant on the
     * points (0.5 is chance, 1.0 is perfect).
     *
     * @param points n rows of d values
     * @param labels 0 or 1 per point
     * @return the fraction classified correctly
     */
    public static double linearSeparability(float[][] points, byte[] labels) {
        int d = points[0].length;
        double[][] means = new double[2][d];
        int[] counts = new int[2];
        for (int i = 0; i < points.length; i++) {
            counts[labels[i]]++;
            for (int j = 0; j < d; j++) {
                means[labels[i]][j] += points[i][j];
            }
        }
        for (int g = 0; g < 2; g++) {
            for (int j = 0; j < d; j++) {
                means[g][j] /= Math.max(1, counts[g]);
            }
        }
        double[][] within = new double[d][d];
        for (int i = 0; i < points.length; i++) {
            for (int a = 0; a < d; a++) {
                for (int b = 0; b < d; b++) {
                    within[a][b] += (points[i][a] - means[labels[i]][a]) * (points[i][b] - means[labels[i]][b]);
                }
            }
        }
        for (int a = 0; a < d; a++) {
            within[a][a] += 1e-6;
        }
        double[] difference = new double[d];
        for (int j = 0; j < d; j++) {
            difference[j] = means[1][j] - means[0][j];
        }
        double[] w = new org.apache.commons.math3.linear.LUDecomposition(new Array2DRowRealMatrix(within))
                .getSolver().solve(new org.apache.commons.math3.linear.ArrayRealVector(difference)).toArray();
        double threshold = 0;
        for (int j = 0; j < d; j++) {
            threshold += w[j] * (means[0][j] + means[1][j]) / 2;
        }
        int correct = 0;
        for (int i = 0; i < points.length; i++) {
            double score = 0;
            for (int j = 0; j < d; j++) {
                score += w[j] * points[i][j];
            }
            if ((score > threshold ? 1 : 0) == labels[i]) {
                correct++;
            }
        }
        return correct / (double) points.length;
    }
}
