source .devscripts/device-call.sh
timeout 200 build/tests/test_kernels_wide_ops > $OUT/wide_ops.txt 2>&1
say "wide_ops rc $? $(tail -1 $OUT/wide_ops.txt) (t $(el) s)"
grep -E "FAIL|outside|wrong|error" $OUT/wide_ops.txt | head -20 | tee -a $OUT/summary.txt
grep -E "^check|^time" $OUT/wide_ops.txt | tee -a $OUT/summary.txt
true
true
