source .devscripts/device-call.sh
# (The wide ops were removed from main in fd697ce: check out 4bbc148 or earlier to run this
# again; NOTES-2026-12-07e.md.)
timeout 200 build/tests/test_kernels_wide_ops > $OUT/wide_ops.txt 2>&1
say "wide_ops rc $? $(tail -1 $OUT/wide_ops.txt) (t $(el) s)"
grep -E "FAIL|outside|wrong|error" $OUT/wide_ops.txt | head -20 | tee -a $OUT/summary.txt
grep -E "^check|^time" $OUT/wide_ops.txt | tee -a $OUT/summary.txt
true
true
