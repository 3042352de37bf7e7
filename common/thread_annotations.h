// Clang's thread-safety annotations: which mutex guards a member, and which a
// function needs held or not held. Clang checks them (-Wthread-safety, an
// error in the clang CI build: scripts/test.sh); other compilers ignore them.
//
// Abseil (which gRPC brings) defines the unprefixed GUARDED_BY family with
// the same meaning and no guard of its own: it is included first, and only
// the names it lacks are defined here.
#pragma once

#if __has_include(<absl/base/thread_annotations.h>)
#include <absl/base/thread_annotations.h>
#endif

#if defined(__clang__)
#define ACCUMULUS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define ACCUMULUS_THREAD_ANNOTATION(x)
#endif

#ifndef GUARDED_BY
#define GUARDED_BY(x) ACCUMULUS_THREAD_ANNOTATION(guarded_by(x))
#endif
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) ACCUMULUS_THREAD_ANNOTATION(pt_guarded_by(x))
#endif
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS ACCUMULUS_THREAD_ANNOTATION(no_thread_safety_analysis)
#endif
#define CAPABILITY(x) ACCUMULUS_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY ACCUMULUS_THREAD_ANNOTATION(scoped_lockable)
#define REQUIRES(...) ACCUMULUS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) ACCUMULUS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) ACCUMULUS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) ACCUMULUS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
