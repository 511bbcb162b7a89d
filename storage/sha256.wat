;; Streaming SHA-256 (FIPS 180-4), the compression function only: the
;; caller (storage/sha256.ts) keeps each hash's state and partial block, pads
;; the message and turns the state into hex. One 64 KiB page:
;;
;;     0 ..    31  the state H0..H7 of the hash being computed (i32, little-
;;                 endian, as all wasm memory), read and written by compress
;;   256 ..   511  the round constants K0..K63
;;  1024 .. 65535  input blocks (1,008 of 64 bytes)
;;
;; Built into storage/sha256_wasm.ts by `deno task build:sha256`
;; (storage/sha256_wasm_build.ts); a test fails when that file is stale.
;;
;; We wrote it (rather than load node:crypto, ~3 MiB of RSS in a receiving
;; peer, or a hashing package: see README "Libraries"). The 64 rounds run as
;; four passes of 16 written-out rounds over the message schedule's 16 words,
;; kept in locals and updated in place between passes. Written out, the eight
;; working variables take turns by name instead of being shifted each round,
;; and 16 rounds bring them back to their first names. (All 64 rounds written
;; out, with the constants inline, measured no faster and is 3 times larger.)
(module
  (memory (export "memory") 1 1)
  (data (i32.const 256)
    "\98\2f\8a\42\91\44\37\71\cf\fb\c0\b5\a5\db\b5\e9" ;; K0..K3
    "\5b\c2\56\39\f1\11\f1\59\a4\82\3f\92\d5\5e\1c\ab" ;; K4..K7
    "\98\aa\07\d8\01\5b\83\12\be\85\31\24\c3\7d\0c\55" ;; K8..K11
    "\74\5d\be\72\fe\b1\de\80\a7\06\dc\9b\74\f1\9b\c1" ;; K12..K15
    "\c1\69\9b\e4\86\47\be\ef\c6\9d\c1\0f\cc\a1\0c\24" ;; K16..K19
    "\6f\2c\e9\2d\aa\84\74\4a\dc\a9\b0\5c\da\88\f9\76" ;; K20..K23
    "\52\51\3e\98\6d\c6\31\a8\c8\27\03\b0\c7\7f\59\bf" ;; K24..K27
    "\f3\0b\e0\c6\47\91\a7\d5\51\63\ca\06\67\29\29\14" ;; K28..K31
    "\85\0a\b7\27\38\21\1b\2e\fc\6d\2c\4d\13\0d\38\53" ;; K32..K35
    "\54\73\0a\65\bb\0a\6a\76\2e\c9\c2\81\85\2c\72\92" ;; K36..K39
    "\a1\e8\bf\a2\4b\66\1a\a8\70\8b\4b\c2\a3\51\6c\c7" ;; K40..K43
    "\19\e8\92\d1\24\06\99\d6\85\35\0e\f4\70\a0\6a\10" ;; K44..K47
    "\16\c1\a4\19\08\6c\37\1e\4c\77\48\27\b5\bc\b0\34" ;; K48..K51
    "\b3\0c\1c\39\4a\aa\d8\4e\4f\ca\9c\5b\f3\6f\2e\68" ;; K52..K55
    "\ee\82\8f\74\6f\63\a5\78\14\78\c8\84\08\02\c7\8c" ;; K56..K59
    "\fa\ff\be\90\eb\6c\50\a4\f7\a3\f9\be\f2\78\71\c6" ;; K60..K63
  )

  ;; Hashes `blocks` 64-byte blocks at `ptr` into the state at 0.
  (func (export "compress") (param $ptr i32) (param $blocks i32)
    (local $a i32) (local $b i32) (local $c i32) (local $d i32)
    (local $e i32) (local $f i32) (local $g i32) (local $h i32)
    (local $t i32) (local $k i32) (local $words v128)
    (local $w0 i32) (local $w1 i32) (local $w2 i32) (local $w3 i32) (local $w4 i32) (local $w5 i32) (local $w6 i32) (local $w7 i32) (local $w8 i32) (local $w9 i32) (local $w10 i32) (local $w11 i32) (local $w12 i32) (local $w13 i32) (local $w14 i32) (local $w15 i32)
    (local.set $a (i32.load offset=0 (i32.const 0)))
    (local.set $b (i32.load offset=4 (i32.const 0)))
    (local.set $c (i32.load offset=8 (i32.const 0)))
    (local.set $d (i32.load offset=12 (i32.const 0)))
    (local.set $e (i32.load offset=16 (i32.const 0)))
    (local.set $f (i32.load offset=20 (i32.const 0)))
    (local.set $g (i32.load offset=24 (i32.const 0)))
    (local.set $h (i32.load offset=28 (i32.const 0)))
    (block $done
      (loop $block
        (br_if $done (i32.eqz (local.get $blocks)))
        ;; The 16 big-endian words of the block.
        (local.set $words (i8x16.shuffle 3 2 1 0 7 6 5 4 11 10 9 8 15 14 13 12
          (v128.load offset=0 (local.get $ptr)) (local.get $words)))
        (local.set $w0 (i32x4.extract_lane 0 (local.get $words)))
        (local.set $w1 (i32x4.extract_lane 1 (local.get $words)))
        (local.set $w2 (i32x4.extract_lane 2 (local.get $words)))
        (local.set $w3 (i32x4.extract_lane 3 (local.get $words)))
        (local.set $words (i8x16.shuffle 3 2 1 0 7 6 5 4 11 10 9 8 15 14 13 12
          (v128.load offset=16 (local.get $ptr)) (local.get $words)))
        (local.set $w4 (i32x4.extract_lane 0 (local.get $words)))
        (local.set $w5 (i32x4.extract_lane 1 (local.get $words)))
        (local.set $w6 (i32x4.extract_lane 2 (local.get $words)))
        (local.set $w7 (i32x4.extract_lane 3 (local.get $words)))
        (local.set $words (i8x16.shuffle 3 2 1 0 7 6 5 4 11 10 9 8 15 14 13 12
          (v128.load offset=32 (local.get $ptr)) (local.get $words)))
        (local.set $w8 (i32x4.extract_lane 0 (local.get $words)))
        (local.set $w9 (i32x4.extract_lane 1 (local.get $words)))
        (local.set $w10 (i32x4.extract_lane 2 (local.get $words)))
        (local.set $w11 (i32x4.extract_lane 3 (local.get $words)))
        (local.set $words (i8x16.shuffle 3 2 1 0 7 6 5 4 11 10 9 8 15 14 13 12
          (v128.load offset=48 (local.get $ptr)) (local.get $words)))
        (local.set $w12 (i32x4.extract_lane 0 (local.get $words)))
        (local.set $w13 (i32x4.extract_lane 1 (local.get $words)))
        (local.set $w14 (i32x4.extract_lane 2 (local.get $words)))
        (local.set $w15 (i32x4.extract_lane 3 (local.get $words)))
        (local.set $k (i32.const 0))
        (loop $pass
          ;; round 16n+0: the working variables a..h are a b c d e f g h
          (local.set $t (i32.add (i32.add (i32.add (local.get $h)
            (i32.xor (i32.xor (i32.rotr (local.get $e) (i32.const 6)) (i32.rotr (local.get $e) (i32.const 11))) (i32.rotr (local.get $e) (i32.const 25))))
            (i32.add (i32.xor (local.get $g) (i32.and (local.get $e) (i32.xor (local.get $f) (local.get $g))))
              (i32.load offset=256 (local.get $k))))
            (local.get $w0)))
          (local.set $d (i32.add (local.get $d) (local.get $t)))
          (local.set $h (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $a) (i32.const 2)) (i32.rotr (local.get $a) (i32.const 13))) (i32.rotr (local.get $a) (i32.const 22)))
            (i32.or (i32.and (local.get $a) (local.get $b)) (i32.and (local.get $c) (i32.or (local.get $a) (local.get $b)))))))
          ;; round 16n+1: the working variables a..h are h a b c d e f g
          (local.set $t (i32.add (i32.add (i32.add (local.get $g)
            (i32.xor (i32.xor (i32.rotr (local.get $d) (i32.const 6)) (i32.rotr (local.get $d) (i32.const 11))) (i32.rotr (local.get $d) (i32.const 25))))
            (i32.add (i32.xor (local.get $f) (i32.and (local.get $d) (i32.xor (local.get $e) (local.get $f))))
              (i32.load offset=260 (local.get $k))))
            (local.get $w1)))
          (local.set $c (i32.add (local.get $c) (local.get $t)))
          (local.set $g (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $h) (i32.const 2)) (i32.rotr (local.get $h) (i32.const 13))) (i32.rotr (local.get $h) (i32.const 22)))
            (i32.or (i32.and (local.get $h) (local.get $a)) (i32.and (local.get $b) (i32.or (local.get $h) (local.get $a)))))))
          ;; round 16n+2: the working variables a..h are g h a b c d e f
          (local.set $t (i32.add (i32.add (i32.add (local.get $f)
            (i32.xor (i32.xor (i32.rotr (local.get $c) (i32.const 6)) (i32.rotr (local.get $c) (i32.const 11))) (i32.rotr (local.get $c) (i32.const 25))))
            (i32.add (i32.xor (local.get $e) (i32.and (local.get $c) (i32.xor (local.get $d) (local.get $e))))
              (i32.load offset=264 (local.get $k))))
            (local.get $w2)))
          (local.set $b (i32.add (local.get $b) (local.get $t)))
          (local.set $f (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $g) (i32.const 2)) (i32.rotr (local.get $g) (i32.const 13))) (i32.rotr (local.get $g) (i32.const 22)))
            (i32.or (i32.and (local.get $g) (local.get $h)) (i32.and (local.get $a) (i32.or (local.get $g) (local.get $h)))))))
          ;; round 16n+3: the working variables a..h are f g h a b c d e
          (local.set $t (i32.add (i32.add (i32.add (local.get $e)
            (i32.xor (i32.xor (i32.rotr (local.get $b) (i32.const 6)) (i32.rotr (local.get $b) (i32.const 11))) (i32.rotr (local.get $b) (i32.const 25))))
            (i32.add (i32.xor (local.get $d) (i32.and (local.get $b) (i32.xor (local.get $c) (local.get $d))))
              (i32.load offset=268 (local.get $k))))
            (local.get $w3)))
          (local.set $a (i32.add (local.get $a) (local.get $t)))
          (local.set $e (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $f) (i32.const 2)) (i32.rotr (local.get $f) (i32.const 13))) (i32.rotr (local.get $f) (i32.const 22)))
            (i32.or (i32.and (local.get $f) (local.get $g)) (i32.and (local.get $h) (i32.or (local.get $f) (local.get $g)))))))
          ;; round 16n+4: the working variables a..h are e f g h a b c d
          (local.set $t (i32.add (i32.add (i32.add (local.get $d)
            (i32.xor (i32.xor (i32.rotr (local.get $a) (i32.const 6)) (i32.rotr (local.get $a) (i32.const 11))) (i32.rotr (local.get $a) (i32.const 25))))
            (i32.add (i32.xor (local.get $c) (i32.and (local.get $a) (i32.xor (local.get $b) (local.get $c))))
              (i32.load offset=272 (local.get $k))))
            (local.get $w4)))
          (local.set $h (i32.add (local.get $h) (local.get $t)))
          (local.set $d (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $e) (i32.const 2)) (i32.rotr (local.get $e) (i32.const 13))) (i32.rotr (local.get $e) (i32.const 22)))
            (i32.or (i32.and (local.get $e) (local.get $f)) (i32.and (local.get $g) (i32.or (local.get $e) (local.get $f)))))))
          ;; round 16n+5: the working variables a..h are d e f g h a b c
          (local.set $t (i32.add (i32.add (i32.add (local.get $c)
            (i32.xor (i32.xor (i32.rotr (local.get $h) (i32.const 6)) (i32.rotr (local.get $h) (i32.const 11))) (i32.rotr (local.get $h) (i32.const 25))))
            (i32.add (i32.xor (local.get $b) (i32.and (local.get $h) (i32.xor (local.get $a) (local.get $b))))
              (i32.load offset=276 (local.get $k))))
            (local.get $w5)))
          (local.set $g (i32.add (local.get $g) (local.get $t)))
          (local.set $c (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $d) (i32.const 2)) (i32.rotr (local.get $d) (i32.const 13))) (i32.rotr (local.get $d) (i32.const 22)))
            (i32.or (i32.and (local.get $d) (local.get $e)) (i32.and (local.get $f) (i32.or (local.get $d) (local.get $e)))))))
          ;; round 16n+6: the working variables a..h are c d e f g h a b
          (local.set $t (i32.add (i32.add (i32.add (local.get $b)
            (i32.xor (i32.xor (i32.rotr (local.get $g) (i32.const 6)) (i32.rotr (local.get $g) (i32.const 11))) (i32.rotr (local.get $g) (i32.const 25))))
            (i32.add (i32.xor (local.get $a) (i32.and (local.get $g) (i32.xor (local.get $h) (local.get $a))))
              (i32.load offset=280 (local.get $k))))
            (local.get $w6)))
          (local.set $f (i32.add (local.get $f) (local.get $t)))
          (local.set $b (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $c) (i32.const 2)) (i32.rotr (local.get $c) (i32.const 13))) (i32.rotr (local.get $c) (i32.const 22)))
            (i32.or (i32.and (local.get $c) (local.get $d)) (i32.and (local.get $e) (i32.or (local.get $c) (local.get $d)))))))
          ;; round 16n+7: the working variables a..h are b c d e f g h a
          (local.set $t (i32.add (i32.add (i32.add (local.get $a)
            (i32.xor (i32.xor (i32.rotr (local.get $f) (i32.const 6)) (i32.rotr (local.get $f) (i32.const 11))) (i32.rotr (local.get $f) (i32.const 25))))
            (i32.add (i32.xor (local.get $h) (i32.and (local.get $f) (i32.xor (local.get $g) (local.get $h))))
              (i32.load offset=284 (local.get $k))))
            (local.get $w7)))
          (local.set $e (i32.add (local.get $e) (local.get $t)))
          (local.set $a (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $b) (i32.const 2)) (i32.rotr (local.get $b) (i32.const 13))) (i32.rotr (local.get $b) (i32.const 22)))
            (i32.or (i32.and (local.get $b) (local.get $c)) (i32.and (local.get $d) (i32.or (local.get $b) (local.get $c)))))))
          ;; round 16n+8: the working variables a..h are a b c d e f g h
          (local.set $t (i32.add (i32.add (i32.add (local.get $h)
            (i32.xor (i32.xor (i32.rotr (local.get $e) (i32.const 6)) (i32.rotr (local.get $e) (i32.const 11))) (i32.rotr (local.get $e) (i32.const 25))))
            (i32.add (i32.xor (local.get $g) (i32.and (local.get $e) (i32.xor (local.get $f) (local.get $g))))
              (i32.load offset=288 (local.get $k))))
            (local.get $w8)))
          (local.set $d (i32.add (local.get $d) (local.get $t)))
          (local.set $h (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $a) (i32.const 2)) (i32.rotr (local.get $a) (i32.const 13))) (i32.rotr (local.get $a) (i32.const 22)))
            (i32.or (i32.and (local.get $a) (local.get $b)) (i32.and (local.get $c) (i32.or (local.get $a) (local.get $b)))))))
          ;; round 16n+9: the working variables a..h are h a b c d e f g
          (local.set $t (i32.add (i32.add (i32.add (local.get $g)
            (i32.xor (i32.xor (i32.rotr (local.get $d) (i32.const 6)) (i32.rotr (local.get $d) (i32.const 11))) (i32.rotr (local.get $d) (i32.const 25))))
            (i32.add (i32.xor (local.get $f) (i32.and (local.get $d) (i32.xor (local.get $e) (local.get $f))))
              (i32.load offset=292 (local.get $k))))
            (local.get $w9)))
          (local.set $c (i32.add (local.get $c) (local.get $t)))
          (local.set $g (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $h) (i32.const 2)) (i32.rotr (local.get $h) (i32.const 13))) (i32.rotr (local.get $h) (i32.const 22)))
            (i32.or (i32.and (local.get $h) (local.get $a)) (i32.and (local.get $b) (i32.or (local.get $h) (local.get $a)))))))
          ;; round 16n+10: the working variables a..h are g h a b c d e f
          (local.set $t (i32.add (i32.add (i32.add (local.get $f)
            (i32.xor (i32.xor (i32.rotr (local.get $c) (i32.const 6)) (i32.rotr (local.get $c) (i32.const 11))) (i32.rotr (local.get $c) (i32.const 25))))
            (i32.add (i32.xor (local.get $e) (i32.and (local.get $c) (i32.xor (local.get $d) (local.get $e))))
              (i32.load offset=296 (local.get $k))))
            (local.get $w10)))
          (local.set $b (i32.add (local.get $b) (local.get $t)))
          (local.set $f (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $g) (i32.const 2)) (i32.rotr (local.get $g) (i32.const 13))) (i32.rotr (local.get $g) (i32.const 22)))
            (i32.or (i32.and (local.get $g) (local.get $h)) (i32.and (local.get $a) (i32.or (local.get $g) (local.get $h)))))))
          ;; round 16n+11: the working variables a..h are f g h a b c d e
          (local.set $t (i32.add (i32.add (i32.add (local.get $e)
            (i32.xor (i32.xor (i32.rotr (local.get $b) (i32.const 6)) (i32.rotr (local.get $b) (i32.const 11))) (i32.rotr (local.get $b) (i32.const 25))))
            (i32.add (i32.xor (local.get $d) (i32.and (local.get $b) (i32.xor (local.get $c) (local.get $d))))
              (i32.load offset=300 (local.get $k))))
            (local.get $w11)))
          (local.set $a (i32.add (local.get $a) (local.get $t)))
          (local.set $e (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $f) (i32.const 2)) (i32.rotr (local.get $f) (i32.const 13))) (i32.rotr (local.get $f) (i32.const 22)))
            (i32.or (i32.and (local.get $f) (local.get $g)) (i32.and (local.get $h) (i32.or (local.get $f) (local.get $g)))))))
          ;; round 16n+12: the working variables a..h are e f g h a b c d
          (local.set $t (i32.add (i32.add (i32.add (local.get $d)
            (i32.xor (i32.xor (i32.rotr (local.get $a) (i32.const 6)) (i32.rotr (local.get $a) (i32.const 11))) (i32.rotr (local.get $a) (i32.const 25))))
            (i32.add (i32.xor (local.get $c) (i32.and (local.get $a) (i32.xor (local.get $b) (local.get $c))))
              (i32.load offset=304 (local.get $k))))
            (local.get $w12)))
          (local.set $h (i32.add (local.get $h) (local.get $t)))
          (local.set $d (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $e) (i32.const 2)) (i32.rotr (local.get $e) (i32.const 13))) (i32.rotr (local.get $e) (i32.const 22)))
            (i32.or (i32.and (local.get $e) (local.get $f)) (i32.and (local.get $g) (i32.or (local.get $e) (local.get $f)))))))
          ;; round 16n+13: the working variables a..h are d e f g h a b c
          (local.set $t (i32.add (i32.add (i32.add (local.get $c)
            (i32.xor (i32.xor (i32.rotr (local.get $h) (i32.const 6)) (i32.rotr (local.get $h) (i32.const 11))) (i32.rotr (local.get $h) (i32.const 25))))
            (i32.add (i32.xor (local.get $b) (i32.and (local.get $h) (i32.xor (local.get $a) (local.get $b))))
              (i32.load offset=308 (local.get $k))))
            (local.get $w13)))
          (local.set $g (i32.add (local.get $g) (local.get $t)))
          (local.set $c (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $d) (i32.const 2)) (i32.rotr (local.get $d) (i32.const 13))) (i32.rotr (local.get $d) (i32.const 22)))
            (i32.or (i32.and (local.get $d) (local.get $e)) (i32.and (local.get $f) (i32.or (local.get $d) (local.get $e)))))))
          ;; round 16n+14: the working variables a..h are c d e f g h a b
          (local.set $t (i32.add (i32.add (i32.add (local.get $b)
            (i32.xor (i32.xor (i32.rotr (local.get $g) (i32.const 6)) (i32.rotr (local.get $g) (i32.const 11))) (i32.rotr (local.get $g) (i32.const 25))))
            (i32.add (i32.xor (local.get $a) (i32.and (local.get $g) (i32.xor (local.get $h) (local.get $a))))
              (i32.load offset=312 (local.get $k))))
            (local.get $w14)))
          (local.set $f (i32.add (local.get $f) (local.get $t)))
          (local.set $b (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $c) (i32.const 2)) (i32.rotr (local.get $c) (i32.const 13))) (i32.rotr (local.get $c) (i32.const 22)))
            (i32.or (i32.and (local.get $c) (local.get $d)) (i32.and (local.get $e) (i32.or (local.get $c) (local.get $d)))))))
          ;; round 16n+15: the working variables a..h are b c d e f g h a
          (local.set $t (i32.add (i32.add (i32.add (local.get $a)
            (i32.xor (i32.xor (i32.rotr (local.get $f) (i32.const 6)) (i32.rotr (local.get $f) (i32.const 11))) (i32.rotr (local.get $f) (i32.const 25))))
            (i32.add (i32.xor (local.get $h) (i32.and (local.get $f) (i32.xor (local.get $g) (local.get $h))))
              (i32.load offset=316 (local.get $k))))
            (local.get $w15)))
          (local.set $e (i32.add (local.get $e) (local.get $t)))
          (local.set $a (i32.add (local.get $t) (i32.add
            (i32.xor (i32.xor (i32.rotr (local.get $b) (i32.const 2)) (i32.rotr (local.get $b) (i32.const 13))) (i32.rotr (local.get $b) (i32.const 22)))
            (i32.or (i32.and (local.get $b) (local.get $c)) (i32.and (local.get $d) (i32.or (local.get $b) (local.get $c)))))))
          (if (i32.ne (local.get $k) (i32.const 192))
            (then
              ;; The next 16 words of the schedule, in place.
              (local.set $w0 (i32.add (i32.add (local.get $w0) (local.get $w9))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w14) (i32.const 17)) (i32.rotr (local.get $w14) (i32.const 19))) (i32.shr_u (local.get $w14) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w1) (i32.const 7)) (i32.rotr (local.get $w1) (i32.const 18))) (i32.shr_u (local.get $w1) (i32.const 3))))))
              (local.set $w1 (i32.add (i32.add (local.get $w1) (local.get $w10))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w15) (i32.const 17)) (i32.rotr (local.get $w15) (i32.const 19))) (i32.shr_u (local.get $w15) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w2) (i32.const 7)) (i32.rotr (local.get $w2) (i32.const 18))) (i32.shr_u (local.get $w2) (i32.const 3))))))
              (local.set $w2 (i32.add (i32.add (local.get $w2) (local.get $w11))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w0) (i32.const 17)) (i32.rotr (local.get $w0) (i32.const 19))) (i32.shr_u (local.get $w0) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w3) (i32.const 7)) (i32.rotr (local.get $w3) (i32.const 18))) (i32.shr_u (local.get $w3) (i32.const 3))))))
              (local.set $w3 (i32.add (i32.add (local.get $w3) (local.get $w12))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w1) (i32.const 17)) (i32.rotr (local.get $w1) (i32.const 19))) (i32.shr_u (local.get $w1) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w4) (i32.const 7)) (i32.rotr (local.get $w4) (i32.const 18))) (i32.shr_u (local.get $w4) (i32.const 3))))))
              (local.set $w4 (i32.add (i32.add (local.get $w4) (local.get $w13))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w2) (i32.const 17)) (i32.rotr (local.get $w2) (i32.const 19))) (i32.shr_u (local.get $w2) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w5) (i32.const 7)) (i32.rotr (local.get $w5) (i32.const 18))) (i32.shr_u (local.get $w5) (i32.const 3))))))
              (local.set $w5 (i32.add (i32.add (local.get $w5) (local.get $w14))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w3) (i32.const 17)) (i32.rotr (local.get $w3) (i32.const 19))) (i32.shr_u (local.get $w3) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w6) (i32.const 7)) (i32.rotr (local.get $w6) (i32.const 18))) (i32.shr_u (local.get $w6) (i32.const 3))))))
              (local.set $w6 (i32.add (i32.add (local.get $w6) (local.get $w15))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w4) (i32.const 17)) (i32.rotr (local.get $w4) (i32.const 19))) (i32.shr_u (local.get $w4) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w7) (i32.const 7)) (i32.rotr (local.get $w7) (i32.const 18))) (i32.shr_u (local.get $w7) (i32.const 3))))))
              (local.set $w7 (i32.add (i32.add (local.get $w7) (local.get $w0))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w5) (i32.const 17)) (i32.rotr (local.get $w5) (i32.const 19))) (i32.shr_u (local.get $w5) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w8) (i32.const 7)) (i32.rotr (local.get $w8) (i32.const 18))) (i32.shr_u (local.get $w8) (i32.const 3))))))
              (local.set $w8 (i32.add (i32.add (local.get $w8) (local.get $w1))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w6) (i32.const 17)) (i32.rotr (local.get $w6) (i32.const 19))) (i32.shr_u (local.get $w6) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w9) (i32.const 7)) (i32.rotr (local.get $w9) (i32.const 18))) (i32.shr_u (local.get $w9) (i32.const 3))))))
              (local.set $w9 (i32.add (i32.add (local.get $w9) (local.get $w2))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w7) (i32.const 17)) (i32.rotr (local.get $w7) (i32.const 19))) (i32.shr_u (local.get $w7) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w10) (i32.const 7)) (i32.rotr (local.get $w10) (i32.const 18))) (i32.shr_u (local.get $w10) (i32.const 3))))))
              (local.set $w10 (i32.add (i32.add (local.get $w10) (local.get $w3))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w8) (i32.const 17)) (i32.rotr (local.get $w8) (i32.const 19))) (i32.shr_u (local.get $w8) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w11) (i32.const 7)) (i32.rotr (local.get $w11) (i32.const 18))) (i32.shr_u (local.get $w11) (i32.const 3))))))
              (local.set $w11 (i32.add (i32.add (local.get $w11) (local.get $w4))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w9) (i32.const 17)) (i32.rotr (local.get $w9) (i32.const 19))) (i32.shr_u (local.get $w9) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w12) (i32.const 7)) (i32.rotr (local.get $w12) (i32.const 18))) (i32.shr_u (local.get $w12) (i32.const 3))))))
              (local.set $w12 (i32.add (i32.add (local.get $w12) (local.get $w5))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w10) (i32.const 17)) (i32.rotr (local.get $w10) (i32.const 19))) (i32.shr_u (local.get $w10) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w13) (i32.const 7)) (i32.rotr (local.get $w13) (i32.const 18))) (i32.shr_u (local.get $w13) (i32.const 3))))))
              (local.set $w13 (i32.add (i32.add (local.get $w13) (local.get $w6))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w11) (i32.const 17)) (i32.rotr (local.get $w11) (i32.const 19))) (i32.shr_u (local.get $w11) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w14) (i32.const 7)) (i32.rotr (local.get $w14) (i32.const 18))) (i32.shr_u (local.get $w14) (i32.const 3))))))
              (local.set $w14 (i32.add (i32.add (local.get $w14) (local.get $w7))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w12) (i32.const 17)) (i32.rotr (local.get $w12) (i32.const 19))) (i32.shr_u (local.get $w12) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w15) (i32.const 7)) (i32.rotr (local.get $w15) (i32.const 18))) (i32.shr_u (local.get $w15) (i32.const 3))))))
              (local.set $w15 (i32.add (i32.add (local.get $w15) (local.get $w8))
                (i32.add (i32.xor (i32.xor (i32.rotr (local.get $w13) (i32.const 17)) (i32.rotr (local.get $w13) (i32.const 19))) (i32.shr_u (local.get $w13) (i32.const 10)))
                  (i32.xor (i32.xor (i32.rotr (local.get $w0) (i32.const 7)) (i32.rotr (local.get $w0) (i32.const 18))) (i32.shr_u (local.get $w0) (i32.const 3))))))
              (local.set $k (i32.add (local.get $k) (i32.const 64)))
              (br $pass))))
        ;; Add the block's result to the state.
        (local.set $a (i32.add (local.get $a) (i32.load offset=0 (i32.const 0))))
        (i32.store offset=0 (i32.const 0) (local.get $a))
        (local.set $b (i32.add (local.get $b) (i32.load offset=4 (i32.const 0))))
        (i32.store offset=4 (i32.const 0) (local.get $b))
        (local.set $c (i32.add (local.get $c) (i32.load offset=8 (i32.const 0))))
        (i32.store offset=8 (i32.const 0) (local.get $c))
        (local.set $d (i32.add (local.get $d) (i32.load offset=12 (i32.const 0))))
        (i32.store offset=12 (i32.const 0) (local.get $d))
        (local.set $e (i32.add (local.get $e) (i32.load offset=16 (i32.const 0))))
        (i32.store offset=16 (i32.const 0) (local.get $e))
        (local.set $f (i32.add (local.get $f) (i32.load offset=20 (i32.const 0))))
        (i32.store offset=20 (i32.const 0) (local.get $f))
        (local.set $g (i32.add (local.get $g) (i32.load offset=24 (i32.const 0))))
        (i32.store offset=24 (i32.const 0) (local.get $g))
        (local.set $h (i32.add (local.get $h) (i32.load offset=28 (i32.const 0))))
        (i32.store offset=28 (i32.const 0) (local.get $h))
        (local.set $ptr (i32.add (local.get $ptr) (i32.const 64)))
        (local.set $blocks (i32.sub (local.get $blocks) (i32.const 1)))
        (br $block)))))
