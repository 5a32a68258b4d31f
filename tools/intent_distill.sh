#!/bin/sh
# Teacher -> student distillation of the citation-intent model on CPU, resumable at every step.
#
#   tools/intent_distill.sh all        # teacher (resumes), then logits, then student (resumes)
#   tools/intent_distill.sh teacher    # only (re)start / resume the mpnet teacher
#   tools/intent_distill.sh logits     # teacher logits on SciCite train + citectx aux (once)
#   tools/intent_distill.sh student    # MiniLM student on hard labels + teacher soft targets
#
# Everything goes to $INTENT_DATA (default /work/data/intent): checkpoints (last.pt every 25/50
# steps, loaded with weights_only=True), logs (teacher.log, student_distill.log), the student's
# int8 ONNX folder. The shipped assistant/models/intent-minilm/ is never touched: compare the student's
# `assistant eval scicite` figure with the shipped one and copy it over only when it is better.
# Needs the all-mpnet-base-v2 weights (`make mpnet`); they are extracted once to $INTENT_DATA.
set -eu
cd "$(dirname "$0")/.."
DATA=${INTENT_DATA:-/work/data/intent}
PY=${PYTHON:-/work/main/.venv/bin/python}
export PYTHONPATH="$PWD" HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
export ASSISTANT_SHARED_DATA="${ASSISTANT_SHARED_DATA:-$PWD/../shared/data}"
MPNET="$DATA/mpnet-src/all-mpnet-base-v2"
# threads per run ($INTENT_THREADS, default 1 beside other jobs; not part of the resume check)
THREADS=${INTENT_THREADS:-1}
# the teacher's configuration: must stay identical for a resume (the trainer refuses otherwise)
TEACHER="--base-model $MPNET --work-dir $DATA/teacher-mpnet --out $DATA/teacher-mpnet-onnx
  --aux --aux-weight 0.5 --epochs 1 --lr 3e-5 --head-lr 1e-3 --batch-size 16 --max-length 80
  --train-top-layers 6 --evals-per-epoch 3 --checkpoint-every 25 --threads $THREADS --seed 13"
mkdir -p "$DATA"

teacher() {
  if [ ! -f "$MPNET/config.json" ]; then
    "$PY" -c "from pathlib import Path; from assistant.inference.build import extract_mpnet; extract_mpnet(Path('$DATA/mpnet-src'))"
  fi
  # shellcheck disable=SC2086
  nice -n 10 "$PY" -m assistant.cli train intent $TEACHER --no-export >> "$DATA/teacher.log" 2>&1
}

logits() {
  [ -f "$DATA/teacher_logits.npz" ] && return 0
  # shellcheck disable=SC2086
  nice -n 10 "$PY" -m assistant.cli train intent $TEACHER --dump-logits "$DATA/teacher_logits.npz" \
    >> "$DATA/teacher.log" 2>&1
}

student() {
  nice -n 10 "$PY" -m assistant.cli train intent --base-model minilm \
    --work-dir "$DATA/student-distill" --out "$DATA/student-distill-onnx" \
    --aux --aux-weight 0.5 --teacher-logits "$DATA/teacher_logits.npz" \
    --distill-alpha 0.5 --distill-temperature 2 --epochs 3 --lr 7e-5 --seed 13 \
    --checkpoint-every 50 --threads "$THREADS" >> "$DATA/student_distill.log" 2>&1
}

case "${1:-all}" in
  teacher) teacher ;;
  logits) logits ;;
  student) student ;;
  all) teacher && logits && student ;;
  *) echo "usage: $0 [all|teacher|logits|student]" >&2; exit 2 ;;
esac
