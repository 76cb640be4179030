// SPDX-License-Identifier: BSD-2-Clause
// A small program linked against real Caffe (scripts/caffe-env.sh fetches it) so that tests and
// benchmarks can ask Caffe itself what it makes of a file cblob wrote:
//
//   caffe_peer load NET.prototxt WEIGHTS.caffemodel OUT_DIR
//       caffe::Net(NET, TEST) then CopyTrainedLayersFrom(WEIGHTS), as a user deploying a model
//       does; for each layer's parameter blob writes OUT_DIR/<layer>.<i>.f32 (the float32 data as
//       Caffe holds it) and prints "<layer> <i> <shape>" lines on standard output
//   caffe_peer read-binary FILE
//       caffe::ReadProtoFromBinaryFile(FILE) into a NetParameter; prints layers, blobs and
//       seconds taken
//   caffe_peer bench FILE WARM
//       bench_cold's child protocol (bench/bench_process.h): ReadProtoFromBinaryFile(FILE) into a
//       fresh NetParameter once (cold), then WARM more times; prints "COLD WARM" in seconds, warm
//       the median (bench_cold --caffe-peer, bench/caffe_load.sh)
#include <string>
#include <vector>

// Debian 11's libcaffe-dev ships a caffe.pb.h that names google::protobuf::ConstStringParam, which
// its own protobuf 3.12 headers do not declare (protobuf 3.14 added it, as this alias); only the
// inline *_Parse helpers use it.
namespace google {
namespace protobuf {
using ConstStringParam = const std::string &;
}  // namespace protobuf
}  // namespace google

#include <caffe/caffe.hpp>
#include <caffe/util/io.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static int load(const char *net_path, const char *weights_path, const std::string &out_dir) {
  caffe::Caffe::set_mode(caffe::Caffe::CPU);
  caffe::Net<float> net(net_path, caffe::TEST);
  net.CopyTrainedLayersFrom(weights_path);
  const auto &layers = net.layers();
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto &blobs = layers[l]->blobs();
    for (size_t i = 0; i < blobs.size(); ++i) {
      std::string name = net.layer_names()[l];
      std::string path = out_dir + "/" + name + "." + std::to_string(i) + ".f32";
      FILE *f = std::fopen(path.c_str(), "wb");
      if (f == nullptr || std::fwrite(blobs[i]->cpu_data(), sizeof(float), blobs[i]->count(), f) !=
                              static_cast<size_t>(blobs[i]->count()) || std::fclose(f) != 0) {
        std::fprintf(stderr, "caffe_peer: cannot write %s\n", path.c_str());
        return 1;
      }
      std::printf("%s %zu %s\n", name.c_str(), i, blobs[i]->shape_string().c_str());
    }
  }
  return 0;
}

static int read_binary(const char *path) {
  caffe::NetParameter param;
  auto start = std::chrono::steady_clock::now();
  bool ok = caffe::ReadProtoFromBinaryFile(path, &param);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ok) {
    std::fprintf(stderr, "caffe_peer: ReadProtoFromBinaryFile(%s) failed\n", path);
    return 1;
  }
  size_t blobs = 0;
  for (int l = 0; l < param.layer_size(); ++l) blobs += param.layer(l).blobs_size();
  for (int l = 0; l < param.layers_size(); ++l) blobs += param.layers(l).blobs_size();
  std::printf("layers %d blobs %zu seconds %.6f\n", param.layer_size() + param.layers_size(), blobs, seconds);
  return 0;
}

static double read_once(const char *path) {
  auto *param = new caffe::NetParameter();
  auto start = std::chrono::steady_clock::now();
  if (!caffe::ReadProtoFromBinaryFile(path, param)) {
    std::fprintf(stderr, "caffe_peer: ReadProtoFromBinaryFile(%s) failed\n", path);
    std::exit(1);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  delete param;  // outside the time, as bench_cold's cblob child destroys its model untimed
  return seconds;
}

static int bench(const char *path, int warm) {
  if (warm < 0 || warm > 64) return 2;
  double cold = read_once(path);
  std::vector<double> times;
  for (int i = 0; i < warm; ++i) times.push_back(read_once(path));
  std::sort(times.begin(), times.end());
  double median = times.empty() ? cold
                                : (times.size() % 2 ? times[times.size() / 2]
                                                    : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2);
  std::printf("%.9f %.9f\n", cold, median);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && std::strcmp(argv[1], "bench") == 0) return bench(argv[2], std::atoi(argv[3]));
  if (argc == 5 && std::strcmp(argv[1], "load") == 0) return load(argv[2], argv[3], argv[4]);
  if (argc == 3 && std::strcmp(argv[1], "read-binary") == 0) return read_binary(argv[2]);
  std::fprintf(stderr, "usage: caffe_peer load NET WEIGHTS OUT_DIR | caffe_peer read-binary FILE | caffe_peer bench FILE WARM\n");
  return 2;
}
