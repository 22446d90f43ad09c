#!/usr/bin/env python3
"""NumPy log-mel feature extraction on a synthetic 16 kHz signal.

Edge-lab style workload (keyword spotting / audio event detection front-end):
a sum of linear chirps plus noise is framed with a hop, Hann-windowed,
transformed with np.fft.rfft, turned into a power spectrum, projected onto a
triangular mel filter bank built in NumPy, log-compressed and differentiated
(deltas).  Each stage is its own function so a profiler can attribute NumPy's
native time to it: frame_signal, power_spectrum, mel_filterbank, log_mel,
deltas.

    python3 audio_features.py --seconds 60 --repeat 3

Needs only numpy; no audio files or network.
"""

import argparse
import statistics
import time

import numpy as np

SAMPLE_RATE = 16000


def synth_signal(seconds, sr, seed):
    """Sum of a few linear chirps with slow amplitude modulation + white noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr), dtype=np.float64) / sr
    sig = np.zeros_like(t)
    for f0, f1, amp in [(100, 3000, 0.5), (6000, 400, 0.3), (1000, 1200, 0.2), (50, 7500, 0.1)]:
        # Chirp whose frequency sweeps f0 -> f1 and back every 10 s.
        period = 10.0
        phase_t = np.abs(((t / period) % 2.0) - 1.0)   # triangle 1 -> 0 -> 1
        freq = f1 + (f0 - f1) * phase_t
        phase = 2 * np.pi * np.cumsum(freq) / sr
        envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 0.25 * t + f0)
        sig += amp * envelope * np.sin(phase)
    sig += 0.05 * rng.standard_normal(t.shape)
    return sig.astype(np.float32)


def frame_signal(signal, frame_len, hop):
    """Overlapping frames as a strided view, then copied (contiguous)."""
    n_frames = 1 + (len(signal) - frame_len) // hop
    frames = np.lib.stride_tricks.as_strided(
        signal,
        shape=(n_frames, frame_len),
        strides=(signal.strides[0] * hop, signal.strides[0]),
        writeable=False,
    )
    return np.ascontiguousarray(frames)


def power_spectrum(frames, n_fft):
    window = np.hanning(frames.shape[1]).astype(np.float32)
    spec = np.fft.rfft(frames * window, n=n_fft, axis=1)
    return (spec.real ** 2 + spec.imag ** 2) / n_fft


def hz_to_mel(hz):
    return 2595.0 * np.log10(1.0 + np.asarray(hz) / 700.0)


def mel_to_hz(mel):
    return 700.0 * (10.0 ** (np.asarray(mel) / 2595.0) - 1.0)


def mel_filterbank(n_mels, n_fft, sr, fmin=20.0, fmax=None):
    """Triangular filters evenly spaced on the mel scale: (n_mels, n_fft//2+1)."""
    fmax = fmax or sr / 2
    mel_points = np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2)
    hz_points = mel_to_hz(mel_points)
    bin_freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
    lower = hz_points[:-2, None]
    center = hz_points[1:-1, None]
    upper = hz_points[2:, None]
    rising = (bin_freqs[None, :] - lower) / (center - lower)
    falling = (upper - bin_freqs[None, :]) / (upper - center)
    fb = np.maximum(0.0, np.minimum(rising, falling))
    fb *= (2.0 / (upper - lower))  # Slaney-style area normalisation
    return fb.astype(np.float32)


def log_mel(power, fbank, eps=1e-10):
    mel = power.astype(np.float32) @ fbank.T   # (frames, n_mels): a GEMM
    return np.log(np.maximum(mel, eps))


def deltas(feat, width=2):
    """Regression deltas over +-width frames (like HTK / librosa.delta)."""
    padded = np.pad(feat, ((width, width), (0, 0)), mode="edge")
    n = len(feat)
    num = sum(k * (padded[width + k:width + k + n] - padded[width - k:width - k + n])
              for k in range(1, width + 1))
    return num / (2 * sum(k * k for k in range(1, width + 1)))


def extract_features(signal, sr, frame_ms, hop_ms, n_fft, fbank):
    frame_len = int(sr * frame_ms / 1000)
    hop = int(sr * hop_ms / 1000)
    frames = frame_signal(signal, frame_len, hop)
    power = power_spectrum(frames, n_fft)
    feat = log_mel(power, fbank)
    feat -= feat.mean(axis=0, keepdims=True)           # cepstral-mean-style normalisation
    d1 = deltas(feat)
    d2 = deltas(d1)
    return frames.shape, power.shape, np.hstack([feat, d1, d2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0,
                    help="length of the synthetic signal (default 60)")
    ap.add_argument("--repeat", type=int, default=15,
                    help="times to run the feature extraction (default 15)")
    ap.add_argument("--frame-ms", type=float, default=25.0)
    ap.add_argument("--hop-ms", type=float, default=10.0)
    ap.add_argument("--n-fft", type=int, default=512)
    ap.add_argument("--n-mels", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    sr = SAMPLE_RATE
    t0 = time.perf_counter()
    signal = synth_signal(args.seconds, sr, args.seed)
    fbank = mel_filterbank(args.n_mels, args.n_fft, sr)
    setup_s = time.perf_counter() - t0

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        frames_shape, power_shape, feats = extract_features(
            signal, sr, args.frame_ms, args.hop_ms, args.n_fft, fbank)
        times.append(time.perf_counter() - t0)

    audio_s = len(signal) / sr
    mean_s = statistics.fmean(times)
    print(f"numpy {np.__version__}  signal {audio_s:.1f} s @ {sr} Hz ({len(signal)} samples, "
          f"synthesis {setup_s:.2f} s)")
    print(f"frames {frames_shape}  power {power_shape}  filterbank {fbank.shape}  "
          f"features {feats.shape} {feats.dtype}")
    print(f"extract: mean {mean_s * 1e3:.1f} ms  min {min(times) * 1e3:.1f} ms over "
          f"{len(times)} runs  ({audio_s / mean_s:.0f}x real time)  "
          f"checksum {float(np.abs(feats).sum()):.1f}")


if __name__ == "__main__":
    main()
