;; The apps' vector and stencil kernels (src/apps/grid.ts) in WebAssembly, for the first solve
;; of a job: V8 compiles a module with its baseline compiler (Liftoff) as it loads, so these run
;; at compiled speed from their first call, where the same loops in JavaScript start in the
;; interpreter and wait for TurboFan (several ms a kernel, on every rank). The arithmetic is the
;; JavaScript kernels' own, operation for operation and in the same order: elementwise loops
;; take two rows per f64x2 lane pair, sums stay sequential, so both give the same bits.
;;
;; Arguments are byte offsets into the imported memory (src/apps/kernels.ts places the vectors)
;; and element counts. Ghosted vectors are (n0+2) x (n1+2) x (n2+2), compact ones n0 x n1 x n2,
;; as in grid.ts. scripts/build-wasm.mjs turns this file into src/apps/kernels-wasm.ts.
(module
  (import "env" "memory" (memory 1))

  ;; y[i] += alpha * x[i], i < n
  (func $axpy (export "axpy") (param $y i32) (param $alpha f64) (param $x i32) (param $n i32)
    (local $end i32) (local $va v128)
    (local.set $end (i32.add (local.get $y) (i32.shl (local.get $n) (i32.const 3))))
    (local.set $va (f64x2.splat (local.get $alpha)))
    (block $done
      (loop $pairs
        (br_if $done (i32.gt_u (i32.add (local.get $y) (i32.const 16)) (local.get $end)))
        (v128.store (local.get $y)
          (f64x2.add (v128.load (local.get $y)) (f64x2.mul (local.get $va) (v128.load (local.get $x)))))
        (local.set $y (i32.add (local.get $y) (i32.const 16)))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (br $pairs)))
    (if (i32.lt_u (local.get $y) (local.get $end))
      (then (f64.store (local.get $y)
        (f64.add (f64.load (local.get $y)) (f64.mul (local.get $alpha) (f64.load (local.get $x))))))))

  ;; d[i] = w[i] + beta * q[i], i < n (q may be d)
  (func $xpby (param $d i32) (param $w i32) (param $beta f64) (param $q i32) (param $n i32)
    (local $end i32) (local $vb v128)
    (local.set $end (i32.add (local.get $d) (i32.shl (local.get $n) (i32.const 3))))
    (local.set $vb (f64x2.splat (local.get $beta)))
    (block $done
      (loop $pairs
        (br_if $done (i32.gt_u (i32.add (local.get $d) (i32.const 16)) (local.get $end)))
        (v128.store (local.get $d)
          (f64x2.add (v128.load (local.get $w)) (f64x2.mul (local.get $vb) (v128.load (local.get $q)))))
        (local.set $d (i32.add (local.get $d) (i32.const 16)))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (local.set $q (i32.add (local.get $q) (i32.const 16)))
        (br $pairs)))
    (if (i32.lt_u (local.get $d) (local.get $end))
      (then (f64.store (local.get $d)
        (f64.add (f64.load (local.get $w)) (f64.mul (local.get $beta) (f64.load (local.get $q))))))))

  ;; y[i] = x[i] * d[i], i < n
  (func (export "scale") (param $y i32) (param $x i32) (param $d i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $y) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $pairs
        (br_if $done (i32.gt_u (i32.add (local.get $y) (i32.const 16)) (local.get $end)))
        (v128.store (local.get $y) (f64x2.mul (v128.load (local.get $x)) (v128.load (local.get $d))))
        (local.set $y (i32.add (local.get $y) (i32.const 16)))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (local.set $d (i32.add (local.get $d) (i32.const 16)))
        (br $pairs)))
    (if (i32.lt_u (local.get $y) (local.get $end))
      (then (f64.store (local.get $y) (f64.mul (f64.load (local.get $x)) (f64.load (local.get $d)))))))

  ;; y[i] = x[i] / d[i], i < n
  (func (export "divide") (param $y i32) (param $x i32) (param $d i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $y) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $pairs
        (br_if $done (i32.gt_u (i32.add (local.get $y) (i32.const 16)) (local.get $end)))
        (v128.store (local.get $y) (f64x2.div (v128.load (local.get $x)) (v128.load (local.get $d))))
        (local.set $y (i32.add (local.get $y) (i32.const 16)))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (local.set $d (i32.add (local.get $d) (i32.const 16)))
        (br $pairs)))
    (if (i32.lt_u (local.get $y) (local.get $end))
      (then (f64.store (local.get $y) (f64.div (f64.load (local.get $x)) (f64.load (local.get $d)))))))

  ;; sum of a[i] * b[i], i < n, in order
  (func $dot (export "dot") (param $a i32) (param $b i32) (param $n i32) (result f64)
    (local $end i32) (local $s f64)
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (local.set $s (f64.add (local.get $s) (f64.mul (f64.load (local.get $a)) (f64.load (local.get $b)))))
        (local.set $a (i32.add (local.get $a) (i32.const 8)))
        (local.set $b (i32.add (local.get $b) (i32.const 8)))
        (br $each)))
    (local.get $s))

  ;; dst[k] = src[idx[k]], k < n: a halo's pack (idx: i32 element indices)
  (func (export "gather") (param $dst i32) (param $src i32) (param $idx i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $dst) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $dst) (local.get $end)))
        (f64.store (local.get $dst)
          (f64.load (i32.add (local.get $src) (i32.shl (i32.load (local.get $idx)) (i32.const 3)))))
        (local.set $dst (i32.add (local.get $dst) (i32.const 8)))
        (local.set $idx (i32.add (local.get $idx) (i32.const 4)))
        (br $each))))

  ;; dst[idx[k]] = src[k], k < n: a halo's unpack
  (func (export "scatter") (param $dst i32) (param $src i32) (param $idx i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $src) (i32.shl (local.get $n) (i32.const 3))))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
        (f64.store (i32.add (local.get $dst) (i32.shl (i32.load (local.get $idx)) (i32.const 3)))
          (f64.load (local.get $src)))
        (local.set $src (i32.add (local.get $src) (i32.const 8)))
        (local.set $idx (i32.add (local.get $idx) (i32.const 4)))
        (br $each))))

  ;; Byte offset of interior row (i0, i1, 0) of a ghosted vector at p.
  (func $ghostLine (param $p i32) (param $n1 i32) (param $n2 i32) (param $i0 i32) (param $i1 i32) (result i32)
    (i32.add (local.get $p)
      (i32.shl
        (i32.add
          (i32.mul
            (i32.add (i32.mul (i32.add (local.get $i0) (i32.const 1)) (i32.add (local.get $n1) (i32.const 2)))
              (i32.add (local.get $i1) (i32.const 1)))
            (i32.add (local.get $n2) (i32.const 2)))
          (i32.const 1))
        (i32.const 3))))

  ;; sum of a[c] * p[g] over the interior, a compact, p ghosted, in row order
  (func (export "dotGhost") (param $n0 i32) (param $n1 i32) (param $n2 i32) (param $a i32) (param $p i32) (result f64)
    (local $i0 i32) (local $i1 i32) (local $g i32) (local $end i32) (local $s f64)
    (loop $planes
      (local.set $i1 (i32.const 0))
      (loop $lines
        (local.set $g (call $ghostLine (local.get $p) (local.get $n1) (local.get $n2) (local.get $i0) (local.get $i1)))
        (local.set $end (i32.add (local.get $a) (i32.shl (local.get $n2) (i32.const 3))))
        (block $done
          (loop $each
            (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
            (local.set $s (f64.add (local.get $s) (f64.mul (f64.load (local.get $a)) (f64.load (local.get $g)))))
            (local.set $a (i32.add (local.get $a) (i32.const 8)))
            (local.set $g (i32.add (local.get $g) (i32.const 8)))
            (br $each)))
        (local.set $i1 (i32.add (local.get $i1) (i32.const 1)))
        (br_if $lines (i32.lt_u (local.get $i1) (local.get $n1))))
      (local.set $i0 (i32.add (local.get $i0) (i32.const 1)))
      (br_if $planes (i32.lt_u (local.get $i0) (local.get $n0))))
    (local.get $s))

  ;; y[c] += alpha * p[g] over the interior, y compact, p ghosted
  (func (export "axpyFromGhost") (param $n0 i32) (param $n1 i32) (param $n2 i32) (param $y i32) (param $alpha f64) (param $p i32)
    (local $i0 i32) (local $i1 i32)
    (loop $planes
      (local.set $i1 (i32.const 0))
      (loop $lines
        (call $axpy (local.get $y) (local.get $alpha)
          (call $ghostLine (local.get $p) (local.get $n1) (local.get $n2) (local.get $i0) (local.get $i1)) (local.get $n2))
        (local.set $y (i32.add (local.get $y) (i32.shl (local.get $n2) (i32.const 3))))
        (local.set $i1 (i32.add (local.get $i1) (i32.const 1)))
        (br_if $lines (i32.lt_u (local.get $i1) (local.get $n1))))
      (local.set $i0 (i32.add (local.get $i0) (i32.const 1)))
      (br_if $planes (i32.lt_u (local.get $i0) (local.get $n0)))))

  ;; p[g] = w[c] + beta * q[g] over the interior, p and q ghosted (q may be p), w compact
  (func (export "xpbyIntoGhost") (param $n0 i32) (param $n1 i32) (param $n2 i32) (param $p i32) (param $w i32) (param $beta f64) (param $q i32)
    (local $i0 i32) (local $i1 i32)
    (loop $planes
      (local.set $i1 (i32.const 0))
      (loop $lines
        (call $xpby
          (call $ghostLine (local.get $p) (local.get $n1) (local.get $n2) (local.get $i0) (local.get $i1))
          (local.get $w) (local.get $beta)
          (call $ghostLine (local.get $q) (local.get $n1) (local.get $n2) (local.get $i0) (local.get $i1))
          (local.get $n2))
        (local.set $w (i32.add (local.get $w) (i32.shl (local.get $n2) (i32.const 3))))
        (local.set $i1 (i32.add (local.get $i1) (i32.const 1)))
        (br_if $lines (i32.lt_u (local.get $i1) (local.get $n1))))
      (local.set $i0 (i32.add (local.get $i0) (i32.const 1)))
      (br_if $planes (i32.lt_u (local.get $i0) (local.get $n0)))))

  ;; y = A p on rows [lo0, hi0) x [lo1, hi1) x [lo2, hi2) for the 7-point Laplacian:
  ;; 6 p[g] - (p[g-1] + p[g+1] + p[g-G] + p[g+G] + p[g-S] + p[g+S]), G and S the ghosted strides.
  (func (export "matvec7") (param $n1 i32) (param $n2 i32) (param $y i32) (param $p i32)
    (param $lo0 i32) (param $hi0 i32) (param $lo1 i32) (param $hi1 i32) (param $lo2 i32) (param $hi2 i32)
    (local $i0 i32) (local $i1 i32) (local $G i32) (local $S i32) (local $g i32) (local $c i32) (local $end i32)
    (local $six v128)
    (if (i32.or (i32.ge_s (local.get $lo2) (local.get $hi2))
          (i32.or (i32.ge_s (local.get $lo0) (local.get $hi0)) (i32.ge_s (local.get $lo1) (local.get $hi1))))
      (then (return)))
    (local.set $G (i32.shl (i32.add (local.get $n2) (i32.const 2)) (i32.const 3)))
    (local.set $S (i32.mul (i32.add (local.get $n1) (i32.const 2)) (local.get $G)))
    (local.set $six (f64x2.splat (f64.const 6)))
    (local.set $i0 (local.get $lo0))
    (loop $planes
      (local.set $i1 (local.get $lo1))
      (loop $lines
        (local.set $g (i32.add (call $ghostLine (local.get $p) (local.get $n1) (local.get $n2) (local.get $i0) (local.get $i1))
          (i32.shl (local.get $lo2) (i32.const 3))))
        (local.set $c (i32.add (local.get $y)
          (i32.shl (i32.add (i32.mul (i32.add (i32.mul (local.get $i0) (local.get $n1)) (local.get $i1)) (local.get $n2)) (local.get $lo2))
            (i32.const 3))))
        (local.set $end (i32.add (local.get $c) (i32.shl (i32.sub (local.get $hi2) (local.get $lo2)) (i32.const 3))))
        (block $done
          (loop $pairs
            (br_if $done (i32.gt_u (i32.add (local.get $c) (i32.const 16)) (local.get $end)))
            (v128.store (local.get $c)
              (f64x2.sub (f64x2.mul (local.get $six) (v128.load (local.get $g)))
                (f64x2.add (f64x2.add (f64x2.add (f64x2.add (f64x2.add
                  (v128.load (i32.sub (local.get $g) (i32.const 8))) (v128.load (i32.add (local.get $g) (i32.const 8))))
                  (v128.load (i32.sub (local.get $g) (local.get $G)))) (v128.load (i32.add (local.get $g) (local.get $G))))
                  (v128.load (i32.sub (local.get $g) (local.get $S)))) (v128.load (i32.add (local.get $g) (local.get $S))))))
            (local.set $c (i32.add (local.get $c) (i32.const 16)))
            (local.set $g (i32.add (local.get $g) (i32.const 16)))
            (br $pairs)))
        (if (i32.lt_u (local.get $c) (local.get $end))
          (then (f64.store (local.get $c)
            (f64.sub (f64.mul (f64.const 6) (f64.load (local.get $g)))
              (f64.add (f64.add (f64.add (f64.add (f64.add
                (f64.load (i32.sub (local.get $g) (i32.const 8))) (f64.load (i32.add (local.get $g) (i32.const 8))))
                (f64.load (i32.sub (local.get $g) (local.get $G)))) (f64.load (i32.add (local.get $g) (local.get $G))))
                (f64.load (i32.sub (local.get $g) (local.get $S)))) (f64.load (i32.add (local.get $g) (local.get $S))))))))
        (local.set $i1 (i32.add (local.get $i1) (i32.const 1)))
        (br_if $lines (i32.lt_s (local.get $i1) (local.get $hi1))))
      (local.set $i0 (i32.add (local.get $i0) (i32.const 1)))
      (br_if $planes (i32.lt_s (local.get $i0) (local.get $hi0)))))

  ;; The sum of the 3 x 3 column through ghosted element a (byte offset) in the two slower
  ;; dimensions, in grid.ts's order, for two neighbouring columns at once.
  (func $column2 (param $a i32) (param $G i32) (param $S i32) (result v128)
    (local $z i32)
    (local.set $z (i32.add (local.get $a) (local.get $S)))
    (local.set $a (i32.sub (local.get $a) (local.get $S)))
    (f64x2.add (f64x2.add (f64x2.add (f64x2.add (f64x2.add (f64x2.add (f64x2.add (f64x2.add
      (v128.load (i32.sub (local.get $a) (local.get $G))) (v128.load (local.get $a)))
      (v128.load (i32.add (local.get $a) (local.get $G))))
      (v128.load (i32.sub (i32.add (local.get $a) (local.get $S)) (local.get $G))))
      (v128.load (i32.add (local.get $a) (local.get $S))))
      (v128.load (i32.add (i32.add (local.get $a) (local.get $S)) (local.get $G))))
      (v128.load (i32.sub (local.get $z) (local.get $G))))
      (v128.load (local.get $z)))
      (v128.load (i32.add (local.get $z) (local.get $G)))))

  ;; The same for one column.
  (func $column1 (param $a i32) (param $G i32) (param $S i32) (result f64)
    (local $z i32)
    (local.set $z (i32.add (local.get $a) (local.get $S)))
    (local.set $a (i32.sub (local.get $a) (local.get $S)))
    (f64.add (f64.add (f64.add (f64.add (f64.add (f64.add (f64.add (f64.add
      (f64.load (i32.sub (local.get $a) (local.get $G))) (f64.load (local.get $a)))
      (f64.load (i32.add (local.get $a) (local.get $G))))
      (f64.load (i32.sub (i32.add (local.get $a) (local.get $S)) (local.get $G))))
      (f64.load (i32.add (local.get $a) (local.get $S))))
      (f64.load (i32.add (i32.add (local.get $a) (local.get $S)) (local.get $G))))
      (f64.load (i32.sub (local.get $z) (local.get $G))))
      (f64.load (local.get $z)))
      (f64.load (i32.add (local.get $z) (local.get $G)))))

  ;; y = A p on rows [lo0, hi0) x [lo1, hi1) x [lo2, hi2) for the 27-point Laplacian:
  ;; 27 p[g] - (col[k-1] + col[k] + col[k+1]), col the 3 x 3 column sums of the line, formed
  ;; once per column into the scratch at $col (hi2 - lo2 + 2 doubles), as grid.ts does.
  (func (export "matvec27") (param $n1 i32) (param $n2 i32) (param $y i32) (param $p i32) (param $col i32)
    (param $lo0 i32) (param $hi0 i32) (param $lo1 i32) (param $hi1 i32) (param $lo2 i32) (param $hi2 i32)
    (local $i0 i32) (local $i1 i32) (local $G i32) (local $S i32) (local $g i32) (local $c i32) (local $k i32)
    (local $end i32) (local $colEnd i32) (local $seven v128)
    (if (i32.or (i32.ge_s (local.get $lo2) (local.get $hi2))
          (i32.or (i32.ge_s (local.get $lo0) (local.get $hi0)) (i32.ge_s (local.get $lo1) (local.get $hi1))))
      (then (return)))
    (local.set $G (i32.shl (i32.add (local.get $n2) (i32.const 2)) (i32.const 3)))
    (local.set $S (i32.mul (i32.add (local.get $n1) (i32.const 2)) (local.get $G)))
    (local.set $seven (f64x2.splat (f64.const 27)))
    (local.set $colEnd (i32.add (local.get $col)
      (i32.shl (i32.add (i32.sub (local.get $hi2) (local.get $lo2)) (i32.const 2)) (i32.const 3))))
    (local.set $i0 (local.get $lo0))
    (loop $planes
      (local.set $i1 (local.get $lo1))
      (loop $lines
        ;; the columns lo2 - 1 .. hi2 of this line
        (local.set $g (i32.add (call $ghostLine (local.get $p) (local.get $n1) (local.get $n2) (local.get $i0) (local.get $i1))
          (i32.shl (i32.sub (local.get $lo2) (i32.const 1)) (i32.const 3))))
        (local.set $k (local.get $col))
        (block $done
          (loop $pairs
            (br_if $done (i32.gt_u (i32.add (local.get $k) (i32.const 16)) (local.get $colEnd)))
            (v128.store (local.get $k) (call $column2 (local.get $g) (local.get $G) (local.get $S)))
            (local.set $k (i32.add (local.get $k) (i32.const 16)))
            (local.set $g (i32.add (local.get $g) (i32.const 16)))
            (br $pairs)))
        (if (i32.lt_u (local.get $k) (local.get $colEnd))
          (then (f64.store (local.get $k) (call $column1 (local.get $g) (local.get $G) (local.get $S)))))
        ;; the rows
        (local.set $g (i32.add (call $ghostLine (local.get $p) (local.get $n1) (local.get $n2) (local.get $i0) (local.get $i1))
          (i32.shl (local.get $lo2) (i32.const 3))))
        (local.set $c (i32.add (local.get $y)
          (i32.shl (i32.add (i32.mul (i32.add (i32.mul (local.get $i0) (local.get $n1)) (local.get $i1)) (local.get $n2)) (local.get $lo2))
            (i32.const 3))))
        (local.set $end (i32.add (local.get $c) (i32.shl (i32.sub (local.get $hi2) (local.get $lo2)) (i32.const 3))))
        (local.set $k (local.get $col))
        (block $done
          (loop $pairs
            (br_if $done (i32.gt_u (i32.add (local.get $c) (i32.const 16)) (local.get $end)))
            (v128.store (local.get $c)
              (f64x2.sub (f64x2.mul (local.get $seven) (v128.load (local.get $g)))
                (f64x2.add (f64x2.add (v128.load (local.get $k)) (v128.load offset=8 (local.get $k)))
                  (v128.load offset=16 (local.get $k)))))
            (local.set $c (i32.add (local.get $c) (i32.const 16)))
            (local.set $g (i32.add (local.get $g) (i32.const 16)))
            (local.set $k (i32.add (local.get $k) (i32.const 16)))
            (br $pairs)))
        (if (i32.lt_u (local.get $c) (local.get $end))
          (then (f64.store (local.get $c)
            (f64.sub (f64.mul (f64.const 27) (f64.load (local.get $g)))
              (f64.add (f64.add (f64.load (local.get $k)) (f64.load offset=8 (local.get $k)))
                (f64.load offset=16 (local.get $k)))))))
        (local.set $i1 (i32.add (local.get $i1) (i32.const 1)))
        (br_if $lines (i32.lt_s (local.get $i1) (local.get $hi1))))
      (local.set $i0 (i32.add (local.get $i0) (i32.const 1)))
      (br_if $planes (i32.lt_s (local.get $i0) (local.get $hi0))))))
