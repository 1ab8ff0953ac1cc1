;; The predefined reductions over one WebAssembly memory: inout[k] = input[k] (+) inout[k], the
;; element loops of src/ops/loops.ts with the same operations in the same order, so the same
;; bits (floats: IEEE add and multiply are exact per element, min and max select as
;; `y < x ? y : x` does; Float32 as float32 arithmetic, which the JavaScript loops' double
;; arithmetic rounded on store equals; Int32 and Uint32 wrap as their stores do).
;;
;; Arguments: the inout and input regions' byte offsets in the imported memory, and their byte
;; length. Four bytes per element or eight; 16 bytes per turn, then the last elements singly.
;; src/ops/folds.ts instantiates this on the node's shared slices (src/shm/node-shared.ts), so
;; that a reduction between buffers of one slice (comm.alloc memory, a collective's scratch)
;; runs as SIMD. scripts/build-wasm.mjs turns this file into src/ops/folds-wasm.ts.
(module
  (import "env" "memory" (memory 1 65536 shared))

  ;; Float64Array
  (func (export "f64_sum") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (f64x2.add (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (f64.store (local.get $io) (f64.add (f64.load (local.get $ii)) (f64.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 8)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 8)))
        (br $one))))

  (func (export "f64_prod") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (f64x2.mul (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (f64.store (local.get $io) (f64.mul (f64.load (local.get $ii)) (f64.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 8)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 8)))
        (br $one))))

  (func (export "f64_min") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (v128.bitselect (local.get $y) (local.get $x) (f64x2.lt (local.get $y) (local.get $x))))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (f64.store (local.get $io) (select (f64.load (local.get $io)) (f64.load (local.get $ii)) (f64.lt (f64.load (local.get $io)) (f64.load (local.get $ii)))))
        (local.set $io (i32.add (local.get $io) (i32.const 8)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 8)))
        (br $one))))

  (func (export "f64_max") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (v128.bitselect (local.get $y) (local.get $x) (f64x2.gt (local.get $y) (local.get $x))))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (f64.store (local.get $io) (select (f64.load (local.get $io)) (f64.load (local.get $ii)) (f64.gt (f64.load (local.get $io)) (f64.load (local.get $ii)))))
        (local.set $io (i32.add (local.get $io) (i32.const 8)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 8)))
        (br $one))))

  ;; Float32Array
  (func (export "f32_sum") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (f32x4.add (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (f32.store (local.get $io) (f32.add (f32.load (local.get $ii)) (f32.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "f32_prod") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (f32x4.mul (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (f32.store (local.get $io) (f32.mul (f32.load (local.get $ii)) (f32.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "f32_min") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (v128.bitselect (local.get $y) (local.get $x) (f32x4.lt (local.get $y) (local.get $x))))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (f32.store (local.get $io) (select (f32.load (local.get $io)) (f32.load (local.get $ii)) (f32.lt (f32.load (local.get $io)) (f32.load (local.get $ii)))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "f32_max") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (v128.bitselect (local.get $y) (local.get $x) (f32x4.gt (local.get $y) (local.get $x))))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (f32.store (local.get $io) (select (f32.load (local.get $io)) (f32.load (local.get $ii)) (f32.gt (f32.load (local.get $io)) (f32.load (local.get $ii)))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  ;; Int32Array (_s) and Uint32Array (_u); sums, products and bitwise ops are the same bits for both
  (func (export "i32_sum") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (i32x4.add (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (i32.add (i32.load (local.get $ii)) (i32.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "i32_prod") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (i32x4.mul (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (i32.mul (i32.load (local.get $ii)) (i32.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "i32_min_s") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (i32x4.min_s (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (select (i32.load (local.get $io)) (i32.load (local.get $ii)) (i32.lt_s (i32.load (local.get $io)) (i32.load (local.get $ii)))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "i32_max_s") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (i32x4.max_s (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (select (i32.load (local.get $io)) (i32.load (local.get $ii)) (i32.gt_s (i32.load (local.get $io)) (i32.load (local.get $ii)))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "i32_min_u") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (i32x4.min_u (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (select (i32.load (local.get $io)) (i32.load (local.get $ii)) (i32.lt_u (i32.load (local.get $io)) (i32.load (local.get $ii)))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "i32_max_u") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (i32x4.max_u (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (select (i32.load (local.get $io)) (i32.load (local.get $ii)) (i32.gt_u (i32.load (local.get $io)) (i32.load (local.get $ii)))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "i32_band") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (v128.and (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (i32.and (i32.load (local.get $ii)) (i32.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "i32_bor") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (v128.or (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (i32.or (i32.load (local.get $ii)) (i32.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))

  (func (export "i32_bxor") (param $io i32) (param $ii i32) (param $bytes i32)
    (local $end i32) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $io) (local.get $bytes)))
    (block $done
      (loop $turn
        (br_if $done (i32.gt_u (i32.add (local.get $io) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $ii)))
        (local.set $y (v128.load (local.get $io)))
        (v128.store (local.get $io) (v128.xor (local.get $x) (local.get $y)))
        (local.set $io (i32.add (local.get $io) (i32.const 16)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 16)))
        (br $turn)))
    (block $tail
      (loop $one
        (br_if $tail (i32.ge_u (local.get $io) (local.get $end)))
        (i32.store (local.get $io) (i32.xor (i32.load (local.get $ii)) (i32.load (local.get $io))))
        (local.set $io (i32.add (local.get $io) (i32.const 4)))
        (local.set $ii (i32.add (local.get $ii) (i32.const 4)))
        (br $one))))
)
