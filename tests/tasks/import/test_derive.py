"""kopt tasks import's derivation, without torch or a GPU: sizes, sweep, stress, tolerance,
flops/bytes, and the mismatch a wrong reference is refused with (scripts/taskimport/)."""
import ast
import math
import pathlib
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))

from taskimport import compare, module_run, numerics, sizes, spec, sweep, torch_op_file  # noqa: E402


def t(name, shape, dtype="f32"):
    return {"name": name, "dtype": dtype, "shape": shape}


class Sizes(unittest.TestCase):
    def test_each_distinct_dimension_is_one_size_named_by_role(self):
        got, fixed, dims = sizes.derive_sizes([t("x", [16, 16384])], [t("out", [16, 16384])])
        self.assertEqual(got, {"rows": 16, "cols": 16384})
        self.assertEqual(fixed, set())
        self.assertEqual(sizes.shape_exprs(t("out", [16, 16384]), dims), ["rows", "cols"])

    def test_matmul_names_and_parameter_sizes_are_fixed(self):
        got, fixed, dims = sizes.derive_sizes([t("a", [128, 64]), t("b", [64, 32])],
                                              [t("out", [128, 32])], matmul=True)
        self.assertEqual(got, {"m": 128, "k": 64, "n": 32})
        got, fixed, _ = sizes.derive_sizes([t("x", [8, 512])], [t("out", [8, 256])],
                                           params=[t("linear_weight", [256, 512])])
        self.assertEqual(got, {"rows": 8, "cols": 512, "out_features": 256})
        self.assertEqual(fixed, {"cols", "out_features"})
        self.assertNotIn("rows", fixed)  # the batch stays free

    def test_a_square_input_gets_a_size_per_axis_and_its_output_follows(self):
        got, _, dims = sizes.derive_sizes([t("x", [8192, 8192])], [t("out", [8192, 8192])])
        self.assertEqual(got, {"rows": 8192, "cols": 8192})
        self.assertEqual(sizes.shape_exprs(t("out", [8192, 8192]), dims), ["rows", "cols"])
        # a later tensor of the same shape is tied axis by axis (x and y of an add), not by value
        got, _, dims = sizes.derive_sizes([t("a", [64, 64]), t("b", [64, 64])], [t("out", [64, 64])])
        self.assertEqual(sizes.shape_exprs(t("b", [64, 64]), dims), ["rows", "cols"])
        # a square matmul keeps m, k and n apart: B is [k, n], not [m, m]
        got, _, dims = sizes.derive_sizes([t("a", [64, 64]), t("b", [64, 64])],
                                          [t("out", [64, 64])], matmul=True)
        self.assertEqual(sizes.shape_exprs(t("a", [64, 64]), dims), ["m", "k"])
        self.assertEqual(sizes.shape_exprs(t("b", [64, 64]), dims), ["k", "n"])
        self.assertEqual(got, {"m": 64, "k": 64, "n": 64})

    def test_output_axis_fitted_from_the_shapes(self):
        outputs = [t("out", [4, 30])]
        dims = {}
        obs = [({"rows": 4, "cols": 32}, {"out": [4, 30]}), ({"rows": 1, "cols": 7}, {"out": [1, 5]})]
        problems = sizes.fit_output_shapes(outputs, dims, obs, {"rows": 4, "cols": 32})
        self.assertEqual(problems, [])
        self.assertEqual(dims[("out", 0)], "rows")
        self.assertEqual(dims[("out", 1)], "cols - 2")

    def test_an_axis_that_follows_nothing_is_said(self):
        obs = [({"n": 4}, {"out": [17]}), ({"n": 5}, {"out": [3]})]
        problems = sizes.fit_output_shapes([t("out", [17])], {}, obs, {"n": 4})
        self.assertEqual(len(problems), 1)
        self.assertIn("output 'out' axis 0", problems[0])


class ReviewDefects(unittest.TestCase):
    """The importer defects an outside review met on KernelBench problems (issue 37)."""

    def test_a_batched_matmul_is_named_b_m_k_n(self):
        got, fixed, dims = sizes.derive_sizes([t("a", [128, 256, 512]), t("b", [128, 512, 64])],
                                              [t("out", [128, 256, 64])], matmul=True)
        self.assertEqual(got, {"b": 128, "m": 256, "k": 512, "n": 64})
        self.assertEqual(sizes.shape_exprs(t("out", [128, 256, 64]), dims), ["b", "m", "n"])

    def test_attention_heads_equal_to_the_batch_are_not_the_batch(self):
        q = [32, 32, 512, 64]  # batch 32 and 32 heads: equal values, different sizes
        got, _, dims = sizes.derive_sizes([t("q", q), t("k", q), t("v", q)], [t("out", q)])
        self.assertEqual(sizes.shape_exprs(t("k", q), dims), sizes.shape_exprs(t("q", q), dims))
        self.assertEqual(sizes.shape_exprs(t("q", q), dims), ["batch", "channels", "height", "width"])
        self.assertEqual(len(got), 4)  # the heads vary apart from the batch in the sweep

    def test_layer_norm_weight_fixes_every_normalized_dim(self):
        x = [16, 64, 256, 256]
        got, fixed, dims = sizes.derive_sizes([t("x", x)], [t("out", x)],
                                              params=[t("weight", [64, 256, 256]),
                                                      t("bias", [64, 256, 256])])
        self.assertEqual(fixed, {"channels", "height", "width"})  # width too: it was left free
        self.assertNotIn("batch", fixed)
        self.assertEqual(sizes.shape_exprs(t("weight", [64, 256, 256]), dims),
                         ["channels", "height", "width"])

    def test_a_bias_fixes_the_last_axis_it_broadcasts_over(self):
        got, fixed, dims = sizes.derive_sizes([t("x", [8, 512])], [t("out", [8, 512])],
                                              params=[t("bias", [512])])
        self.assertEqual(fixed, {"cols"})

    def test_max_error_covers_the_largest_stress_outputs(self):
        tol = numerics.tolerance("f32", 1.0, 4.0, 1)
        # The review's case: |diff| 0.121 on a value of 2.4e6 (relative 5e-8) on 'outliers std 1000'.
        self.assertLess(tol["max_error"], 0.121)
        covered = numerics.cover_magnitudes(tol, [4.0, 2.4e6, float("nan")])
        self.assertGreater(covered["max_error"], 0.121)
        self.assertEqual(covered["rtol"], tol["rtol"])  # the per-element check is unchanged
        self.assertEqual(covered["atol"], tol["atol"])
        exact = numerics.tolerance("i64", 1, 1, 1)
        self.assertEqual(numerics.cover_magnitudes(exact, [1e9]), exact)
        self.assertEqual(numerics.cover_magnitudes(tol, [0.5]), tol)  # smaller rounds change nothing

    def test_a_zero_initialised_parameter_is_redrawn_nonzero(self):
        self.assertEqual(numerics.redraw_scale(0.0, 0.0), 1.0)  # a bias of zeros
        self.assertEqual(numerics.redraw_scale(0.0, 1.0), 1.0)  # LayerNorm's weight of ones
        self.assertEqual(numerics.redraw_scale(0.0, 3.0), 3.0)
        self.assertEqual(numerics.redraw_scale(0.02, 0.0), 0.02)

    def test_refusals_name_the_tensor(self):
        class Fake:
            dtype = "torch.bool"
        with self.assertRaises(module_run.NotImportable) as caught:
            module_run.dtype_name(None, Fake(), "input 'mask'")
        self.assertIn("input 'mask'", str(caught.exception))
        self.assertIn("bool", str(caught.exception))

    def test_small_sweep_shapes_the_module_refuses_are_replaced(self):
        # A pool of kernel 4: sizes under 4 are refused; the edges 1 and 7 get stand-ins.
        shapes, _ = sweep.propose_shapes({"n": 4096}, set(), "n", lambda b: 4 * b["n"],
                                         valid=lambda b: b["n"] >= 4)
        small = sorted(s["n"] for s in shapes if s and s["n"] < 4096)
        self.assertNotIn(1, small)
        self.assertGreaterEqual(len([n for n in small if n < 36]), 2)  # 1's stand-in and 7
        self.assertIn(7, small)
        for n in small:
            self.assertGreaterEqual(n, 4)

    def test_a_stand_in_keeps_the_edges_tail(self):
        self.assertEqual(sweep.stand_ins(1, 4096)[:3], [3, 5, 9])
        self.assertTrue(all(v % 4 for v in sweep.stand_ins(7, 4096)))  # still not a multiple of 4
        self.assertTrue(all(v < 4096 for v in sweep.stand_ins(160, 4096)))


class Sweep(unittest.TestCase):
    def nbytes(self, b):
        return 8 * b["rows"] * b["cols"]

    def test_edges_default_larger_and_holdouts(self):
        shapes, holdout = sweep.propose_shapes({"rows": 4096, "cols": 4096}, set(), "cols",
                                               self.nbytes)
        self.assertIn({"rows": 1, "cols": 1}, shapes)
        self.assertIn({"rows": 7, "cols": 7}, shapes)        # not a multiple of 4
        self.assertIn({"rows": 36, "cols": 36}, shapes)      # of 4, not of 32
        self.assertIn({"rows": 160, "cols": 160}, shapes)    # of 32, not of 128
        self.assertIn({}, shapes)
        self.assertIn({"cols": 8193}, shapes)                # larger
        self.assertIn({"rows": 4097, "cols": 4097}, holdout)
        self.assertEqual(len(shapes), len({str(s) for s in shapes}))

    def test_fixed_sizes_never_change_and_budget_holds(self):
        shapes, holdout = sweep.propose_shapes({"rows": 64, "cols": 1 << 26}, {"rows"}, "cols",
                                               self.nbytes)
        for s in shapes + holdout:
            self.assertNotIn("rows", s)
        for s in shapes:
            b = {"rows": 64, "cols": 1 << 26}
            b.update(s)
            self.assertLessEqual(self.nbytes(b), max(sweep.LARGE_BYTES, self.nbytes({"rows": 64, "cols": 1 << 26})))
        self.assertNotIn({"cols": (1 << 27) + 1}, shapes)  # 68 GiB: over the budget

    def test_shapes_the_module_refuses_are_dropped(self):
        shapes, _ = sweep.propose_shapes({"rows": 64, "cols": 64}, set(), "cols", self.nbytes,
                                         valid=lambda b: b["cols"] >= 3)
        self.assertNotIn({"rows": 1, "cols": 1}, shapes)
        self.assertIn({"rows": 7, "cols": 7}, shapes)


class Numerics(unittest.TestCase):
    def test_softmax_gets_std_40_and_a_mirrored_mean(self):
        rounds = numerics.propose_stress({"aten._softmax.default"}, [t("x", [4, 8])])
        self.assertEqual([r["name"] for r in rounds], ["std 40", "mean 1000"])
        twin = numerics.mirrored(rounds[1])
        self.assertEqual(twin["inputs"]["x"]["mean"], -1000)
        self.assertIsNone(numerics.mirrored(rounds[0]))  # nothing to reflect

    def test_norms_reductions_and_selection(self):
        names = lambda ops: [r["name"] for r in numerics.propose_stress(ops, [t("x", [4, 8])])]
        self.assertEqual(names({"aten.native_layer_norm"}), ["mean 1000, tiny spread", "constant rows"])
        self.assertEqual(names({"aten.sum"}), ["offset 1000"])
        self.assertEqual(names({"aten.argmax"}), ["ties", "equal rows"])
        self.assertEqual(names({"aten.relu"}), [])
        # index inputs are never stressed
        self.assertEqual(numerics.propose_stress({"aten.sum"}, [t("ids", [4], "i32")]), [])

    def test_tolerance_by_dtype(self):
        # exact, and a max_error kopt accepts (> 0): an argmax off by one index is off by 1
        self.assertEqual(numerics.tolerance("i32", 1, 1, 1), {"atol": 0, "rtol": 0, "max_error": 0.5})
        self.assertEqual(numerics.tolerance("i64", 5, 900, 1)["max_error"], 0.5)
        bf = numerics.tolerance("bf16", 1.0, 4.0, 1)
        self.assertEqual(bf["rtol"], 1.6e-2)
        f32 = numerics.tolerance("f32", 1.0, 4.0, 1)
        self.assertEqual(f32["rtol"], 1e-5)
        self.assertGreater(numerics.tolerance("f32", 1.0, 4.0, 65536)["rtol"], f32["rtol"])
        self.assertGreater(bf["max_error"], bf["atol"])

    def test_peak(self):
        self.assertEqual(numerics.peak({"aten.mm"}, {"bf16"}), "bf16_tensor")
        self.assertEqual(numerics.peak({"aten.relu"}, {"bf16"}), "fp32")
        # A GEMM on float8_e4m3fn tensors (dequantized or scaled) is bounded by the fp8 peak.
        self.assertEqual(numerics.peak({"aten.mm"}, {"e4m3", "bf16"}), "fp8_tensor")
        self.assertEqual(spec.dtype_tag({"e4m3", "f32"}), "fp8")


class Spec(unittest.TestCase):
    def test_bytes_reads_inputs_once_and_writes_outputs_once(self):
        dims = {("x", 0): "rows", ("x", 1): "cols", ("out", 0): "rows", ("out", 1): "cols - 2"}
        text = spec.bytes_expr([t("x", [1, 1]), t("out", [1, 1], "bf16")],
                               lambda x: sizes.shape_exprs(x, dims))
        self.assertEqual(text, "4*rows*cols + 2*rows*(cols - 2)")
        fp8 = spec.bytes_expr([t("x", [1, 1], "e4m3"), t("out", [1, 1], "bf16")],
                              lambda x: sizes.shape_exprs(x, dims))
        self.assertEqual(fp8, "rows*cols + 2*rows*(cols - 2)")  # one byte an element
        self.assertEqual(sweep.evaluate(text, {"rows": 2, "cols": 10}), 80 + 32)

    def test_the_modules_eager_and_compiled_times_are_its_production_baselines(self):
        dims = {("x", 0): "rows", ("x", 1): "cols", ("out", 0): "rows", ("out", 1): "cols"}
        x = dict(t("x", [1, 1]), init={"dist": "normal", "mean": 0, "std": 1})
        task = spec.assemble("row_op", "d", ["reduction"], {"rows": 4, "cols": 8}, [x],
                             [t("out", [1, 1])], lambda v: sizes.shape_exprs(v, dims), [{}], [],
                             [], {"atol": 1e-5, "rtol": 1e-5}, "2*rows*cols", "fp32")
        self.assertEqual(task["production_baselines"], ["torch_eager", "torch_compile"])

    def test_a_hostile_file_name_stays_inside_the_docstring(self):
        source = torch_op_file.render("x", 'a"""\nimport os; os.system("touch PWNED")\n#.py', [], None,
                                      ["a"], [], [])
        tree = ast.parse(source)
        self.assertEqual([type(n).__name__ for n in tree.body[:3]], ["Expr", "Import", "Import"])
        self.assertNotIn("os.system", "".join(ast.unparse(n) for n in tree.body[1:]))

    def test_flops_fitted_with_fixed_sizes_named(self):
        sz = {"rows": 8, "k": 512, "n": 256}
        obs = [({"rows": r, "k": 512, "n": 256}, 2 * r * 512 * 256) for r in (1, 7, 8)]
        self.assertEqual(spec.fit_flops(obs, sz, {"k", "n"}), "2*rows*k*n")
        obs = [({"rows": r, "cols": c}, 3 * r * c) for r, c in ((1, 1), (7, 7), (36, 36), (8, 64))]
        self.assertEqual(spec.fit_flops(obs, {"rows": 8, "cols": 64}, set()), "3*rows*cols")

    def test_flops_fitted_on_the_large_shapes_despite_lower_order_terms(self):
        # log_softmax + nll: 5 per element plus 3 per row plus 1: rows * cols dominates
        obs = [({"rows": r, "cols": c}, 5 * r * c + 3 * r + 1)
               for r, c in ((1, 1), (7, 7), (36, 36), (160, 160), (32768, 4096), (32769, 4097))]
        self.assertEqual(spec.fit_flops(obs, {"rows": 32768, "cols": 4096}, set()), "5*rows*cols")

    def test_init_from_the_example(self):
        self.assertEqual(spec.init_from_stats("i64", {"min": 0, "max": 9, "mean": 4, "std": 3})["high"], 10)
        u = spec.init_from_stats("f32", {"min": 0.0, "max": 1.0, "mean": 0.5, "std": 1 / math.sqrt(12)})
        self.assertEqual(u["dist"], "uniform")
        n = spec.init_from_stats("f32", {"min": -4, "max": 4, "mean": 0.001, "std": 1.0})
        self.assertEqual(n, {"dist": "normal", "mean": 0, "std": 1.0})


    def test_index_bounds_follow_their_size_and_rand_inputs_become_signed(self):
        init = spec.symbolic_bound({"dist": "randint", "low": 0, "high": 4096},
                                   {"rows": 32768, "cols": 4096})
        self.assertEqual(init["high"], "cols")
        self.assertEqual(spec.signed({"dist": "uniform", "low": 0.0, "high": 1.0})["low"], -1.0)
        self.assertEqual(spec.signed({"dist": "normal", "mean": 0, "std": 1}),
                         {"dist": "normal", "mean": 0, "std": 1})


class Mismatch(unittest.TestCase):
    TOL = {"atol": 1e-5, "rtol": 1e-5, "max_error": 1e-3}

    def test_a_wrong_reference_is_named_by_shape_element_and_values(self):
        expected = [0.25] * 12
        reference = list(expected)
        reference[7] = float("nan")  # softmax without the max: NaN on large logits
        i = compare.first_mismatch(reference, expected, self.TOL)
        self.assertEqual(i, 7)
        text = compare.describe("out", compare.unravel(i, [3, 4]), reference[i], expected[i],
                                compare.where_text({"rows": 3, "cols": 4}, "mean 1000"), self.TOL)
        self.assertIn("shape cols=4 rows=3 on stress round 'mean 1000'", text)
        self.assertIn("out[1, 3]", text)
        self.assertIn("nan from the reference and 0.25 from PyTorch", text)

    def test_within_tolerance_passes_and_max_error_wins(self):
        self.assertIsNone(compare.first_mismatch([1.0 + 1e-6], [1.0], self.TOL))
        self.assertEqual(compare.first_mismatch([1.0, 2.0, 3.1], [1.0, 2.0, 3.0], self.TOL), 2)
        loose = dict(self.TOL, min_pass_fraction=0.5)
        self.assertIsNone(compare.first_mismatch([1.0, 2.00002], [1.0, 2.0], loose))


if __name__ == "__main__":
    unittest.main()
