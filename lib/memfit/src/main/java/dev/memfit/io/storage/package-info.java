/**
 * Where the bytes of files come from and how new files are made safely: positional and memory-mapped reads
 * ({@link dev.memfit.io.storage.Storage}), fixed-size records at offsets ({@link dev.memfit.io.storage.RecordIndex}),
 * the page cache ({@link dev.memfit.io.storage.PageCache}), verified copies to local scratch, and writers that go
 * through a temporary name and an atomic rename.
 */
package dev.memfit.io.storage;
